// Depthwise causal short convolution over packed sequences (DESIGN §2, FLA ShortConvolution semantics):
//   z[t,d] = bias[d] + Σ_{i<W} w[d,i] · x[t−W+1+i, d],  y = silu(z) or z,
// where positions before a sequence's first token read the per-sequence state [N,D,W] (most recent last) or 0;
// nothing reads across a boundary. tokSeq [T] holds each token's sequence (−1 for padding), seqStart/seqEnd [N].
// Token-parallel kernels use grid (T, ceil(D/128)) with block 128, so a warp reads 32 consecutive channels (tokens
// on x: grid.y is limited to 65535, grid.x is not).
#include "kda_common.cuh"

#define CONV_MAX_W 8

// Input at position p of sequence n (p may lie up to W−1 tokens before the start: then the state is read).
template <typename T>
__device__ __forceinline__ float convInput(const T* x, const float* state0, int n, int start, int p, int d,
                                           int D, int W) {
    if (p >= start) {
        return ld(x, (size_t) p * D + d);
    }
    return state0 != 0 ? state0[((size_t) n * D + d) * W + W - (start - p)] : 0.0f;
}

template <typename T>
__device__ __forceinline__ float convPre(const T* x, const float* w, const float* bias, const float* state0,
                                         int n, int start, int t, int d, int D, int W) {
    float z = bias != 0 ? bias[d] : 0.0f;
    for (int i = 0; i < W; i++) {
        z += w[(size_t) d * W + i] * convInput(x, state0, n, start, t - W + 1 + i, d, D, W);
    }
    return z;
}

template <typename T>
__device__ void convFwd(const T* x, const float* w, const float* bias, const float* state0, const int* tokSeq,
                        const int* seqStart, int D, int W, int silu, T* y) {
    const int d = blockIdx.y * blockDim.x + threadIdx.x, t = blockIdx.x;
    if (d >= D) {
        return;
    }
    const int n = tokSeq[t];
    float out = 0.0f;
    if (n >= 0) {
        const float z = convPre(x, w, bias, state0, n, seqStart[n], t, d, D, W);
        out = silu ? z * sigmoidf(z) : z;
    }
    st(y, (size_t) t * D + d, out);
}

// Final state [N,D,W]: the last W inputs of ext = [state0 | x of the sequence]. grid (N, ceil(D/128)).
template <typename T>
__device__ void convFinalState(const T* x, const float* state0, const int* seqStart, const int* seqEnd, int D,
                               int W, float* stateOut) {
    const int d = blockIdx.y * blockDim.x + threadIdx.x, n = blockIdx.x;
    if (d >= D) {
        return;
    }
    const int start = seqStart[n], len = seqEnd[n] - start;
    for (int j = 0; j < W; j++) {
        const int m = len + j;                 // column of ext
        float val;
        if (m < W) {
            val = state0 != 0 ? state0[((size_t) n * D + d) * W + m] : 0.0f;
        } else {
            val = ld(x, (size_t) (start + m - W) * D + d);
        }
        stateOut[((size_t) n * D + d) * W + j] = val;
    }
}

// dz = dy · act'(z), recomputing z. Padding tokens get 0.
template <typename T>
__device__ void convBwdDz(const T* x, const float* w, const float* bias, const float* state0, const T* dy,
                          const int* tokSeq, const int* seqStart, int D, int W, int silu, float* dz) {
    const int d = blockIdx.y * blockDim.x + threadIdx.x, t = blockIdx.x;
    if (d >= D) {
        return;
    }
    const int n = tokSeq[t];
    float out = 0.0f;
    if (n >= 0) {
        const float g = ld(dy, (size_t) t * D + d);
        if (silu) {
            const float z = convPre(x, w, bias, state0, n, seqStart[n], t, d, D, W);
            const float s = sigmoidf(z);
            out = g * s * (1.0f + z * (1.0f - s));
        } else {
            out = g;
        }
    }
    dz[(size_t) t * D + d] = out;
}

// dx[t] = Σ_i w[i] · dz[t + W−1−i] over outputs inside the same sequence.
__device__ void convBwdDx(const float* dz, const float* w, const int* tokSeq, const int* seqEnd, int D, int W,
                          float* dx) {
    const int d = blockIdx.y * blockDim.x + threadIdx.x, t = blockIdx.x;
    if (d >= D) {
        return;
    }
    const int n = tokSeq[t];
    float out = 0.0f;
    if (n >= 0) {
        const int end = seqEnd[n];
        for (int i = 0; i < W; i++) {
            const int s = t + W - 1 - i;
            if (s < end) {
                out += w[(size_t) d * W + i] * dz[(size_t) s * D + d];
            }
        }
    }
    dx[(size_t) t * D + d] = out;
}

// dweight [D,W] and dbias [D]: sums over tokens, one CTA per channel. grid (D), block 256.
template <typename T>
__device__ void convBwdParams(const T* x, const float* state0, const float* dz, const int* tokSeq,
                              const int* seqStart, int Ttot, int D, int W, float* dw, float* dbias) {
    __shared__ float red[256];
    const int d = blockIdx.x, tid = threadIdx.x;
    float acc[CONV_MAX_W];
    float accB = 0.0f;
    for (int i = 0; i < CONV_MAX_W; i++) {
        acc[i] = 0.0f;
    }
    for (int t = tid; t < Ttot; t += blockDim.x) {
        const int n = tokSeq[t];
        if (n < 0) {
            continue;
        }
        const float g = dz[(size_t) t * D + d];
        accB += g;
#pragma unroll
        for (int i = 0; i < CONV_MAX_W; i++) {
            if (i < W) {
                acc[i] += g * convInput(x, state0, n, seqStart[n], t - W + 1 + i, d, D, W);
            }
        }
    }
#pragma unroll
    for (int i = 0; i < CONV_MAX_W; i++) {
        if (i < W) {
            const float s = blockSum(acc[i], red);
            if (tid == 0) {
                dw[(size_t) d * W + i] = s;
            }
        }
    }
    const float sb = blockSum(accB, red);
    if (tid == 0 && dbias != 0) {
        dbias[d] = sb;
    }
}

// dstate[n,d,j] = Σ_{t=start}^{min(end, start+j)−1} w[d, start+j−1−t] · dz[t,d]; column 0 is always 0.
// grid (N, ceil(D/128)).
__device__ void convBwdState(const float* dz, const float* w, const int* seqStart, const int* seqEnd, int D, int W,
                             float* dstate) {
    const int d = blockIdx.y * blockDim.x + threadIdx.x, n = blockIdx.x;
    if (d >= D) {
        return;
    }
    const int start = seqStart[n], end = seqEnd[n];
    for (int j = 0; j < W; j++) {
        float s = 0.0f;
        for (int t = start; t < end && t < start + j; t++) {
            s += w[(size_t) d * W + start + j - 1 - t] * dz[(size_t) t * D + d];
        }
        dstate[((size_t) n * D + d) * W + j] = s;
    }
}

// Adds the gradient of the final state [N,D,W]: column j is ext[:, L+j], an input token or (L+j < W) a column of
// the initial state. Runs after conv_bwd_dx and conv_bwd_state; one thread per (sequence, channel), so no races.
__device__ void convBwdFinalState(const float* dFinal, const int* seqStart, const int* seqEnd, int D, int W,
                                  int hasState, float* dx, float* dstate) {
    const int d = blockIdx.y * blockDim.x + threadIdx.x, n = blockIdx.x;
    if (d >= D) {
        return;
    }
    const int start = seqStart[n], len = seqEnd[n] - start;
    for (int j = 0; j < W; j++) {
        const int m = len + j;
        const float g = dFinal[((size_t) n * D + d) * W + j];
        if (m >= W) {
            dx[(size_t) (start + m - W) * D + d] += g;
        } else if (hasState) {
            dstate[((size_t) n * D + d) * W + m] += g;
        }
    }
}

#define CONV_DTYPE_ENTRIES(SUF, T)                                                                             \
extern "C" __global__ void __launch_bounds__(128) conv_fwd_##SUF(                                              \
        const T* x, const float* w, const float* bias, const float* state0, const int* tokSeq,                \
        const int* seqStart, int D, int W, int silu, T* y) {                                                   \
    convFwd<T>(x, w, bias, state0, tokSeq, seqStart, D, W, silu, y);                                           \
}                                                                                                              \
extern "C" __global__ void __launch_bounds__(128) conv_final_state_##SUF(                                      \
        const T* x, const float* state0, const int* seqStart, const int* seqEnd, int D, int W,                \
        float* stateOut) {                                                                                     \
    convFinalState<T>(x, state0, seqStart, seqEnd, D, W, stateOut);                                           \
}                                                                                                              \
extern "C" __global__ void __launch_bounds__(128) conv_bwd_dz_##SUF(                                           \
        const T* x, const float* w, const float* bias, const float* state0, const T* dy, const int* tokSeq,   \
        const int* seqStart, int D, int W, int silu, float* dz) {                                              \
    convBwdDz<T>(x, w, bias, state0, dy, tokSeq, seqStart, D, W, silu, dz);                                    \
}                                                                                                              \
extern "C" __global__ void __launch_bounds__(256) conv_bwd_params_##SUF(                                       \
        const T* x, const float* state0, const float* dz, const int* tokSeq, const int* seqStart, int Ttot,   \
        int D, int W, float* dw, float* dbias) {                                                               \
    convBwdParams<T>(x, state0, dz, tokSeq, seqStart, Ttot, D, W, dw, dbias);                                  \
}

CONV_DTYPE_ENTRIES(f32, float)
CONV_DTYPE_ENTRIES(bf16, bf16_t)

extern "C" __global__ void __launch_bounds__(128) conv_bwd_dx(
        const float* dz, const float* w, const int* tokSeq, const int* seqEnd, int D, int W, float* dx) {
    convBwdDx(dz, w, tokSeq, seqEnd, D, W, dx);
}

extern "C" __global__ void __launch_bounds__(128) conv_bwd_state(
        const float* dz, const float* w, const int* seqStart, const int* seqEnd, int D, int W, float* dstate) {
    convBwdState(dz, w, seqStart, seqEnd, D, W, dstate);
}

extern "C" __global__ void __launch_bounds__(128) conv_bwd_final_state(
        const float* dFinal, const int* seqStart, const int* seqEnd, int D, int W, int hasState, float* dx,
        float* dstate) {
    convBwdFinalState(dFinal, seqStart, seqEnd, D, W, hasState, dx, dstate);
}
