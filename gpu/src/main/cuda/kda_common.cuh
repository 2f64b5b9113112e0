// Shared helpers of the kdapack CUDA kernels. Compiles with nvcc (device code) and, through
// gpu/src/test/cuda/emu.h, as plain C++ for the CPU emulation that checks the kernels without a GPU.
#pragma once

#ifndef KDA_EMULATION
#define KDA_DYN_SMEM(type, name) extern __shared__ type name[]
#endif

// bf16 is carried as its raw 16 bits (no cuda_bf16.h: the same code builds on the host emulation).
typedef unsigned short bf16_t;

__device__ __forceinline__ float bitsToFloat(unsigned int u) {
#ifdef KDA_EMULATION
    float f; memcpy(&f, &u, 4); return f;
#else
    return __uint_as_float(u);
#endif
}

__device__ __forceinline__ unsigned int floatToBits(float f) {
#ifdef KDA_EMULATION
    unsigned int u; memcpy(&u, &f, 4); return u;
#else
    return __float_as_uint(f);
#endif
}

__device__ __forceinline__ float ld(const float* p, size_t i) { return p[i]; }
__device__ __forceinline__ float ld(const bf16_t* p, size_t i) { return bitsToFloat(((unsigned int) p[i]) << 16); }

__device__ __forceinline__ void st(float* p, size_t i, float v) { p[i] = v; }
__device__ __forceinline__ void st(bf16_t* p, size_t i, float v) {
    unsigned int u = floatToBits(v);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0u) {
        p[i] = (bf16_t) ((u >> 16) | 0x40u);           // NaN stays NaN
    } else {
        u += 0x7fffu + ((u >> 16) & 1u);                 // round to nearest even
        p[i] = (bf16_t) (u >> 16);
    }
}

__device__ __forceinline__ float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

// The gate cumsum Γ is kept in double: a hard reset (g = −1000) makes |Γ| large, and the differences
// Γ_r − Γ_c of two fp32 cumsums would then lose about 1e-4 of absolute precision (ulp(1000) = 6e-5),
// visible as 1e-4 relative errors. The difference is taken in double, the exponential in float.
__device__ __forceinline__ float expDiff(double later, double earlier) { return expf((float) (later - earlier)); }
__device__ __forceinline__ float expG(double g) { return expf((float) g); }

__device__ __forceinline__ float softplusf(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

// Sum over the block; blockDim.x must be a power of two; red holds blockDim.x floats. Every thread calls it.
__device__ __forceinline__ float blockSum(float v, float* red) {
    const int tid = threadIdx.x;
    red[tid] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) {
            red[tid] += red[tid + s];
        }
        __syncthreads();
    }
    float r = red[0];
    __syncthreads();
    return r;
}

// Gate modes, as io.kdapack.core.kda.KdaOptions.Gate ordinal.
#define KDA_GATE_NONE 0
#define KDA_GATE_SOFTPLUS 1
#define KDA_GATE_LOWER_BOUND 2

// Chunk length: chunks of a sequence are 64 tokens, the last one partial; sub-blocks of 16 tokens.
#define KDA_CHUNK 64
#define KDA_SUB 16
// Value columns per CTA of the state sweeps.
#define KDA_BV 32
