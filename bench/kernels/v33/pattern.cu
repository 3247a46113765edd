// v33: does the shape of a warp's weight loads matter to DRAM, at equal bytes in flight?
// A pure read of a q4 17408x5120 weight matrix (17408 rows of 2560 bytes) as the GEMV
// kernels read it: each warp load is R rows x C bytes (R * C = 2048: 32 lanes x 4 x 16 B;
// gemv_mma.cu reads 16 x 128, gemv_ring.cu's stages 4 or 8 x 512), D such loads in flight
// per warp (a rolling register ring), 16 warps a block, one block an SM; G warps share a
// strip of R rows and take its C-byte steps in turn (G = 4: four warps' 128-byte pieces of
// a row are adjacent, so a block still reads 512-byte runs). Nothing is computed: the
// loads are XOR-folded, so time is the access pattern's. Four copies of the matrix
// (178 MB, > L2) rotate. Build: nvcc -O3 -arch=sm_90 -o pattern pattern.cu
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

constexpr int N = 17408, ROW = 2560, COPIES = 4, WARPS = 16;

template <int R, int G, int D>
__global__ void __launch_bounds__(WARPS * 32) readk(const unsigned char* __restrict__ w, unsigned* out) {
    constexpr int C = 2048 / R;          // bytes of a row per warp load
    constexpr int PR = C / 16;           // 16-byte pieces of a row per load
    constexpr int STEPS = ROW / C;       // loads along a row
    static_assert(STEPS % G == 0, "G divides the steps");
    constexpr int MINE = STEPS / G;      // steps of a strip per warp
    const int lane = threadIdx.x & 31;
    const int gw = blockIdx.x * WARPS + (threadIdx.x >> 5);
    const int nw = gridDim.x * WARPS;
    const int grp = gw / G, j = gw % G, ngrp = nw / G;
    // Units of G consecutive steps of a strip, a contiguous run of them per group of G
    // warps (balanced to one unit); warp j of a group takes step j of each unit.
    const long long units = (long long)(N / R) * MINE;
    const long long u0 = grp * units / ngrp, u1 = (grp + 1) * units / ngrp;
    const int items = (int)(u1 - u0);
    auto addr = [&](int it, int i) {
        const long long u = u0 + it;
        const int strip = (int)(u / MINE);
        const int step = (int)(u % MINE) * G + j;
        const int p = i * 32 + lane;     // piece of the 2048-byte load
        const int r = p / PR, c = p % PR;
        return (const uint4*)(w + (long long)(strip * R + r) * ROW + step * C + c * 16);
    };
    uint4 b[D][4];
    uint4 acc = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int d = 0; d < D; ++d)
#pragma unroll
        for (int i = 0; i < 4; ++i)
            b[d][i] = d < items ? __ldg(addr(d, i)) : make_uint4(0, 0, 0, 0);
    for (int it = 0; it < items; it += D) {
#pragma unroll
        for (int d = 0; d < D; ++d) {
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                acc.x ^= b[d][i].x; acc.y ^= b[d][i].y; acc.z ^= b[d][i].z; acc.w ^= b[d][i].w;
            }
            const int nx = it + d + D;
#pragma unroll
            for (int i = 0; i < 4; ++i)
                b[d][i] = nx < items ? __ldg(addr(nx, i)) : make_uint4(0, 0, 0, 0);
        }
    }
    out[gw * 32 + lane] = acc.x ^ acc.y ^ acc.z ^ acc.w;
}

template <int R, int G, int D>
void run(const unsigned char* w, unsigned* out, int sms, cudaEvent_t a, cudaEvent_t b) {
    const long long bytes = (long long)N * ROW;
    for (int i = 0; i < 8; ++i) readk<R, G, D><<<sms, WARPS * 32>>>(w + (i % COPIES) * bytes, out);
    CK(cudaGetLastError());
    const int reps = 40;
    float best = 1e30f, ms;
    float times[reps];
    for (int i = 0; i < reps; ++i) {
        CK(cudaEventRecord(a));
        readk<R, G, D><<<sms, WARPS * 32>>>(w + (i % COPIES) * bytes, out);
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        CK(cudaEventElapsedTime(&ms, a, b));
        times[i] = ms * 1000.0f;
    }
    // median
    for (int i = 0; i < reps; ++i) for (int k = i + 1; k < reps; ++k) if (times[k] < times[i]) { float t = times[i]; times[i] = times[k]; times[k] = t; }
    best = times[reps / 2];
    printf("R=%2d C=%4d G=%d D=%d  in flight/SM %3d KB  %7.2f us  %6.0f GB/s\n", R, 2048 / R, G, D,
           D * 2 * WARPS, best, bytes / (best * 1e3));
}

int main() {
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const long long bytes = (long long)N * ROW;
    unsigned char* w;
    unsigned* out;
    CK(cudaMalloc(&w, bytes * COPIES));
    CK(cudaMalloc(&out, (size_t)sms * WARPS * 32 * 4));
    CK(cudaMemset(w, 0x5a, bytes * COPIES));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    // the copy ceiling: device-to-device, read + written
    {
        float ms, t[20];
        for (int i = 0; i < 20; ++i) {
            CK(cudaEventRecord(a));
            CK(cudaMemcpyAsync(w + ((i + 1) % COPIES) * bytes, w + (i % COPIES) * bytes, bytes, cudaMemcpyDeviceToDevice));
            CK(cudaEventRecord(b));
            CK(cudaEventSynchronize(b));
            CK(cudaEventElapsedTime(&ms, a, b));
            t[i] = ms * 1000.0f;
        }
        for (int i = 0; i < 20; ++i) for (int k = i + 1; k < 20; ++k) if (t[k] < t[i]) { float x = t[i]; t[i] = t[k]; t[k] = x; }
        printf("copy %.0f GB/s (read + written); a read of the matrix at that rate: %.2f us\n",
               2.0 * bytes / (t[10] * 1e3), bytes / (2.0 * bytes / (t[10] * 1e3)) / 1e3);
    }
    for (int round = 0; round < 2; ++round) {
        printf("-- round %d\n", round + 1);
        run<16, 1, 1>(w, out, sms, a, b); run<16, 1, 2>(w, out, sms, a, b); run<16, 1, 4>(w, out, sms, a, b);
        run<8, 1, 1>(w, out, sms, a, b);  run<8, 1, 2>(w, out, sms, a, b);  run<8, 1, 4>(w, out, sms, a, b);
        run<4, 1, 1>(w, out, sms, a, b);  run<4, 1, 2>(w, out, sms, a, b);  run<4, 1, 4>(w, out, sms, a, b);
        run<1, 1, 1>(w, out, sms, a, b);  run<1, 1, 2>(w, out, sms, a, b);  run<1, 1, 4>(w, out, sms, a, b);
        run<16, 2, 2>(w, out, sms, a, b); run<16, 4, 1>(w, out, sms, a, b); run<16, 4, 2>(w, out, sms, a, b);
        run<16, 4, 4>(w, out, sms, a, b);
    }
    return 0;
}
