# The weights-as-A fragment mapping of weights-as-a.patch checked on the CPU: one warp, one
# group (64 k), a tile pair, with the m16n8k16 fragment layouts of the PTX ISA (A row-major:
# a0 (g, 2t..2t+1), a1 (g + 8, ...), a2 (g, 2t + 8..), a3 (g + 8, 2t + 8..); B: b0 (k 2t.., n
# g), b1 (k 2t + 8.., n g)); prints the largest difference from the direct sum q . x (~1e-12).
import random
random.seed(1)
T=3
q=[[random.randint(-8,7) for _ in range(64)] for _ in range(16)]
x=[[random.gauss(0,1) for _ in range(64)] for _ in range(T)]
xs=[x[i] if i<T else [0.0]*64 for i in range(8)]
def pairs_of_word(v): return [(136+v[i],136+v[i+4]) for i in range(4)]
D=[[0.0]*8 for _ in range(16)]
for u in range(2):
  for h in range(2):
    A=[[0.0]*16 for _ in range(16)]; B=[[0.0]*8 for _ in range(16)]
    for lane in range(32):
        g,t=lane>>2,lane&3
        w=t+4*u
        pa=pairs_of_word(q[g][8*w:8*w+8]); pb=pairs_of_word(q[g+8][8*w:8*w+8])
        a0,a1,a2,a3=pa[2*h],pb[2*h],pa[2*h+1],pb[2*h+1]
        A[g][2*t:2*t+2]=a0; A[g+8][2*t:2*t+2]=a1; A[g][2*t+8:2*t+10]=a2; A[g+8][2*t+8:2*t+10]=a3
        xv=xs[g][8*w:8*w+8]
        st=[(xv[0],xv[4]),(xv[1],xv[5]),(xv[2],xv[6]),(xv[3],xv[7])]
        b0,b1=st[2*h],st[2*h+1]
        B[2*t][g],B[2*t+1][g]=b0; B[2*t+8][g],B[2*t+9][g]=b1
    for r in range(16):
        for n in range(8):
            D[r][n]+=sum(A[r][k]*B[k][n] for k in range(16))
err=0
for r in range(16):
    for n in range(T):
        got=D[r][n]-136*sum(xs[n])
        want=sum(q[r][k]*xs[n][k] for k in range(64))
        err=max(err,abs(got-want))
print("max err", err)
