# Registers and spills of rendered kernels, as ptxas reports them through NVRTC:
#   source scripts/nvrtc-env.sh
#   ninfer kernels render linear_tc_q4_g64_plain_t1 > /tmp/t1.cu
#   python3 bench/kernels/v74/ptxas.py /tmp/t1.cu [more.cu ...]
# (ARCH=sm_90a by default.) Finds libnvrtc on LD_LIBRARY_PATH or in the project's .nvrtc.
import ctypes, glob, os, sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
dirs = os.environ.get("LD_LIBRARY_PATH", "").split(":") + [os.path.join(root, ".nvrtc/nvidia/cu13/lib")]
lib = None
for d in dirs:
    for f in glob.glob(os.path.join(d, "libnvrtc.so*")):
        try:
            lib = ctypes.CDLL(f)
            break
        except OSError:
            pass
    if lib:
        break
if lib is None:
    sys.exit("no libnvrtc found: source scripts/nvrtc-env.sh first")
arch = os.environ.get("ARCH", "sm_90a").encode()
for path in sys.argv[1:]:
    src = open(path, "rb").read()
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), src, b"k.cu", 0, None, None) == 0
    opts = [b"--std=c++17", b"--fmad=true", b"--gpu-architecture=" + arch, b"--ptxas-options=-v"]
    rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    n = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetProgramLog(prog, log)
    print(path, "rc", rc)
    print(log.value.decode())
