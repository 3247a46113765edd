# Source this file: makes sure an NVRTC library is loadable and puts it on LD_LIBRARY_PATH.
#
# Uses a system NVRTC when the loader already finds libnvrtc.so.13; otherwise installs the
# `nvidia-cuda-nvrtc` 13.0.x wheel from PyPI into .nvrtc/ at the project root (once).
# NVRTC_WHEEL_VERSION overrides the version.

_ninfer_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_ninfer_nvrtc_dir="$_ninfer_root/.nvrtc"
_ninfer_nvrtc_lib="$_ninfer_nvrtc_dir/nvidia/cu13/lib"

if [ -f "$_ninfer_nvrtc_lib/libnvrtc.so.13" ]; then
    :
elif ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so\.13'; then
    _ninfer_nvrtc_lib=""
else
    echo "installing NVRTC (nvidia-cuda-nvrtc ${NVRTC_WHEEL_VERSION:-13.0.*}) into $_ninfer_nvrtc_dir" >&2
    _py="$(command -v python3 || command -v python)"
    if [ -z "$_py" ]; then
        echo "error: python3 is needed to install NVRTC from PyPI" >&2
        return 1 2>/dev/null || exit 1
    fi
    "$_py" -m pip install --quiet --disable-pip-version-check --no-deps --target "$_ninfer_nvrtc_dir" \
        "nvidia-cuda-nvrtc==${NVRTC_WHEEL_VERSION:-13.0.*}" >&2 || {
        echo "error: could not install nvidia-cuda-nvrtc from PyPI" >&2
        return 1 2>/dev/null || exit 1
    }
    if [ ! -f "$_ninfer_nvrtc_lib/libnvrtc.so.13" ]; then
        echo "error: the nvidia-cuda-nvrtc wheel did not contain $_ninfer_nvrtc_lib/libnvrtc.so.13" >&2
        return 1 2>/dev/null || exit 1
    fi
fi

if [ -n "$_ninfer_nvrtc_lib" ]; then
    export LD_LIBRARY_PATH="$_ninfer_nvrtc_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
unset _ninfer_root _ninfer_nvrtc_dir _ninfer_nvrtc_lib _py
