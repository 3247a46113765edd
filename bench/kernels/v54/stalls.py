# Summarises an `ncu --page source --csv --print-source sass` export (gzipped or not):
# stall samples by reason, by opcode, the top instructions, and by 100-instruction windows.
import csv, gzip, sys, collections, re
op_=gzip.open if sys.argv[1].endswith(".gz") else open
rows=list(csv.reader(op_(sys.argv[1], "rt")))
hdr=rows[1]; data=rows[2:]
ia=hdr.index("Warp Stall Sampling (All Samples)"); isrc=hdr.index("Source"); ie=hdr.index("Instructions Executed")
st=[i for i,h in enumerate(hdr) if h.startswith("stall_") and "Not Issued" not in h]
f=lambda x: float(x) if x not in ("",None) else 0.0
tot=sum(f(r[ia]) for r in data)
reason=collections.Counter()
for r in data:
    for i in st: reason[hdr[i]]+=f(r[i])
print("total samples", tot)
print("by reason:", ", ".join(f"{k[6:]} {v/tot:.1%}" for k,v in reason.most_common(10)))
op=collections.Counter(); opn=collections.Counter()
for r in data:
    m=re.match(r"\s*(@!?U?P\w+\s+)?([A-Z0-9_]+)", r[isrc]); o=m.group(2) if m else "?"
    op[o]+=f(r[ia]); opn[o]+=f(r[ie])
print("by opcode (samples share / executed share):")
te=sum(opn.values())
for k,v in op.most_common(14): print(f"  {k:10} {v/tot:6.1%}  exec {opn[k]/te:6.1%}")
idx=[j for j,r in enumerate(data) if "HMMA" in r[isrc]]
lo,hi=idx[0],idx[-1]
print("top instructions:")
top=sorted(range(len(data)), key=lambda j:-f(data[j][ia]))[:18]
for j in top:
    r=data[j]; rs=sorted(((f(r[i]),hdr[i][6:]) for i in st), reverse=True)[:3]
    print(f"  {j:5} {f(r[ia])/tot:5.1%} {r[isrc][:60]:60} " + " ".join(f"{n}:{v:.0f}" for v,n in rs if v>0))
print("cumulative by 100-instruction windows:")
w=collections.Counter()
for j,r in enumerate(data): w[j//100]+=f(r[ia])
print(" ".join(f"{k*100}:{v/tot:.0%}" for k,v in sorted(w.items()) if v/tot>=0.01))
print("HMMA index range", lo, hi)
