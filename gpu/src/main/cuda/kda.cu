// Varlen chunked Kimi Delta Attention (KDA), forward and backward (DESIGN §2).
//
// Layout (FLA): q,k [T,H,K], v [T,HV,V], g [T,HV,K], beta [T,HV], states [N,HV,K,V]; value head hv reads
// q/k head hv / (HV/H). The host cuts every sequence into chunks of 64 tokens (the last one partial) that
// never straddle a boundary; chunk c covers tokens chunkStart[c] .. chunkStart[c]+chunkLen[c]-1 and the
// chunks of sequence n are seqChunkStart[n] .. seqChunkStart[n+1]-1. Nothing is padded to a chunk multiple.
//
// Scratch tensors are token-indexed, so a chunk-local matrix row r lives at token t0 + r:
//   qhat, khat [T,HV,K]        normalised q (unscaled) and k, per value head
//   gam [T,HV,K] (double)      the gate cumsum Γ restarted at each chunk
//   betah [T,HV]               beta after the optional sigmoid
//   Aqk, Linv [T,HV,64]        scale·q k^T decay (c <= r) and (I + A_kk)^-1 of the chunk
//   W [T,HV,K], U [T,HV,V]     WY/UT transform: W = M (exp(Γ) ⊙ K), U = M V, M = (I + A_kk)^-1 diag(beta)
//   hchunk [C_total,HV,K,V]    state at the start of each chunk; vnew [T,HV,V] = U − W S (V')
// Every exponent is a difference Γ_r − Γ_c with r >= c (≤ 0): masked before exp, never after.
#include "kda_common.cuh"

// ---------------------------------------------------------------------------------------------------------
// Forward 1: per (chunk, hv): l2norm, gate, beta sigmoid, Γ = cumsum of the decay within the chunk.
// grid (chunks, HV), block 128 (one thread per key channel, K <= 128).
template <typename T>
__device__ void kdaFwdPrep(const T* q, const T* k, const T* g, const T* beta, const float* aLog,
                           const float* dtBias, const int* chunkStart, const int* chunkLen, int H, int HV, int K,
                           int gate, float lowerBound, int l2norm, int betaSigmoid,
                           float* qhat, float* khat, double* gam, float* betah) {
    __shared__ float red[128];
    const int c = blockIdx.x, hv = blockIdx.y, d = threadIdx.x;
    const int t0 = chunkStart[c], len = chunkLen[c];
    const int h = hv / (HV / H);
    const float expA = aLog != 0 ? expf(aLog[hv]) : 1.0f;
    const float bias = (gate != KDA_GATE_NONE && d < K) ? dtBias[(size_t) hv * K + d] : 0.0f;
    double acc = 0.0;
    for (int r = 0; r < len; r++) {
        const int t = t0 + r;
        float qv = d < K ? ld(q, ((size_t) t * H + h) * K + d) : 0.0f;
        float kv = d < K ? ld(k, ((size_t) t * H + h) * K + d) : 0.0f;
        if (l2norm) {
            const float qs = blockSum(qv * qv, red);
            const float ks = blockSum(kv * kv, red);
            qv = qv / sqrtf(qs + 1e-6f);
            kv = kv / sqrtf(ks + 1e-6f);
        }
        if (d < K) {
            const size_t o = ((size_t) t * HV + hv) * K + d;
            const float graw = ld(g, o);
            float decay;
            if (gate == KDA_GATE_NONE) {
                decay = graw;
            } else if (gate == KDA_GATE_SOFTPLUS) {
                decay = -expA * softplusf(graw + bias);
            } else {
                decay = lowerBound * sigmoidf(expA * (graw + bias));
            }
            acc += decay;
            qhat[o] = qv;
            khat[o] = kv;
            gam[o] = acc;
        }
        if (d == 0) {
            const float b = ld(beta, (size_t) t * HV + hv);
            betah[(size_t) t * HV + hv] = betaSigmoid ? sigmoidf(b) : b;
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Forward 2: per (chunk, hv): A_kk and A_qk by 16-token sub-blocks, (I + A_kk)^-1, W and U.
// Off-diagonal 16x16 tiles factor through the anchor row a (the first row of the row block):
//   exp(Γ_r − Γ_c) = exp(Γ_r − Γ_a) · exp(Γ_a − Γ_c), both exponents <= 0 for c < a <= r,
// so a tile is a plain [16,K]x[K,16] product of two staged operands (tensor-core shaped); the diagonal tiles
// take the exponent per element. grid (chunks, HV), block 256, dynamic smem (3·16·K + 2·64·64) floats.
template <typename T>
__device__ void kdaFwdIntra(const T* v, const float* qhat, const float* khat, const double* gam, const float* betah,
                            const int* chunkStart, const int* chunkLen, int HV, int K, int V, float scale,
                            float* Aqk, float* Linv, float* W, float* U) {
    KDA_DYN_SMEM(float, smem);
    float* rowK = smem;                          // [16,K] k_r ⊙ exp(Γ_r − Γ_a)
    float* rowQ = rowK + KDA_SUB * K;            // [16,K] q_r ⊙ exp(Γ_r − Γ_a)
    float* colK = rowQ + KDA_SUB * K;            // [16,K] k_c ⊙ exp(Γ_a − Γ_c)
    float* A = colK + KDA_SUB * K;               // [64,64] strictly lower A_kk
    float* Li = A + KDA_CHUNK * KDA_CHUNK;       // [64,64] (I + A_kk)^-1
    const int c = blockIdx.x, hv = blockIdx.y, tid = threadIdx.x, nt = blockDim.x;
    const int t0 = chunkStart[c], len = chunkLen[c];
#define ROW(buf, r, width) (((size_t) (t0 + (r)) * HV + hv) * (width))
    for (int e = tid; e < KDA_CHUNK * KDA_CHUNK; e += nt) {
        A[e] = 0.0f;
        Li[e] = 0.0f;
    }
    for (int e = tid; e < len * KDA_CHUNK; e += nt) {
        Aqk[ROW(Aqk, e / KDA_CHUNK, KDA_CHUNK) + e % KDA_CHUNK] = 0.0f;
    }
    __syncthreads();
    for (int a = 0; a < len; a += KDA_SUB) {
        const double* gA = gam + ROW(gam, a, K);
        for (int e = tid; e < KDA_SUB * K; e += nt) {
            const int rr = e / K, i = e % K, r = a + rr;
            float fk = 0.0f, fq = 0.0f;
            if (r < len) {
                const float f = expDiff(gam[ROW(gam, r, K) + i], gA[i]);
                fk = khat[ROW(khat, r, K) + i] * f;
                fq = qhat[ROW(qhat, r, K) + i] * f;
            }
            rowK[e] = fk;
            rowQ[e] = fq;
        }
        for (int b = 0; b < a; b += KDA_SUB) {
            __syncthreads();
            for (int e = tid; e < KDA_SUB * K; e += nt) {
                const int cc = e / K, i = e % K, col = b + cc;
                colK[e] = khat[ROW(khat, col, K) + i] * expDiff(gA[i], gam[ROW(gam, col, K) + i]);
            }
            __syncthreads();
            for (int e = tid; e < KDA_SUB * KDA_SUB; e += nt) {
                const int rr = e / KDA_SUB, cc = e % KDA_SUB, r = a + rr;
                if (r < len) {
                    float sk = 0.0f, sq = 0.0f;
                    for (int i = 0; i < K; i++) {
                        sk += rowK[rr * K + i] * colK[cc * K + i];
                        sq += rowQ[rr * K + i] * colK[cc * K + i];
                    }
                    A[r * KDA_CHUNK + b + cc] = betah[(size_t) (t0 + r) * HV + hv] * sk;
                    Aqk[ROW(Aqk, r, KDA_CHUNK) + b + cc] = scale * sq;
                }
            }
        }
        // Diagonal tile: exponents per element, c <= r only.
        for (int e = tid; e < KDA_SUB * KDA_SUB; e += nt) {
            const int r = a + e / KDA_SUB, col = a + e % KDA_SUB;
            if (r < len && col <= r) {
                const double* gr = gam + ROW(gam, r, K);
                const double* gc = gam + ROW(gam, col, K);
                const float* kr = khat + ROW(khat, r, K);
                const float* kc = khat + ROW(khat, col, K);
                const float* qr = qhat + ROW(qhat, r, K);
                float sk = 0.0f, sq = 0.0f;
                for (int i = 0; i < K; i++) {
                    const float f = expDiff(gr[i], gc[i]);
                    sk += kr[i] * kc[i] * f;
                    sq += qr[i] * kc[i] * f;
                }
                if (col < r) {
                    A[r * KDA_CHUNK + col] = betah[(size_t) (t0 + r) * HV + hv] * sk;
                }
                Aqk[ROW(Aqk, r, KDA_CHUNK) + col] = scale * sq;
            }
        }
        __syncthreads();
    }
    // (I + A)^-1 by forward substitution; column j depends only on column j of earlier rows.
    for (int j = tid; j < len; j += nt) {
        for (int r = j; r < len; r++) {
            float x = r == j ? 1.0f : 0.0f;
            for (int m = j; m < r; m++) {
                x -= A[r * KDA_CHUNK + m] * Li[m * KDA_CHUNK + j];
            }
            Li[r * KDA_CHUNK + j] = x;
        }
    }
    __syncthreads();
    for (int e = tid; e < len * KDA_CHUNK; e += nt) {
        Linv[ROW(Linv, e / KDA_CHUNK, KDA_CHUNK) + e % KDA_CHUNK] = Li[e];
    }
    for (int e = tid; e < len * K; e += nt) {
        const int r = e / K, i = e % K;
        float s = 0.0f;
        for (int m = 0; m <= r; m++) {
            s += Li[r * KDA_CHUNK + m] * betah[(size_t) (t0 + m) * HV + hv]
                 * khat[ROW(khat, m, K) + i] * expG(gam[ROW(gam, m, K) + i]);
        }
        W[ROW(W, r, K) + i] = s;
    }
    for (int e = tid; e < len * V; e += nt) {
        const int r = e / V, j = e % V;
        float s = 0.0f;
        for (int m = 0; m <= r; m++) {
            s += Li[r * KDA_CHUNK + m] * betah[(size_t) (t0 + m) * HV + hv] * ld(v, ROW(v, m, V) + j);
        }
        U[ROW(U, r, V) + j] = s;
    }
#undef ROW
}

// ---------------------------------------------------------------------------------------------------------
// Forward 3: the only sequential part. Per (sequence, hv, 32 value columns): the state tile S [K,32] stays
// in shared memory while the sweep walks the sequence's chunks: save S, V' = U − W S,
// S ← exp(Γ_last) ⊙ S + (exp(Γ_last − Γ) ⊙ K)^T V'. grid (N, HV, ceil(V/32)), block 256.
__device__ void kdaFwdState(const float* W, const float* U, const float* khat, const double* gam, const float* h0,
                            const int* seqChunkStart, const int* chunkStart, const int* chunkLen,
                            int HV, int K, int V, float* hchunk, float* vnew, float* ht) {
    __shared__ float S[128 * KDA_BV];
    __shared__ float Vn[KDA_CHUNK * KDA_BV];
    const int n = blockIdx.x, hv = blockIdx.y, v0 = blockIdx.z * KDA_BV, tid = threadIdx.x, nt = blockDim.x;
    const int bv = min(KDA_BV, V - v0);
    const size_t stateOff = ((size_t) n * HV + hv) * K * V;
    for (int e = tid; e < K * KDA_BV; e += nt) {
        const int i = e / KDA_BV, j = e % KDA_BV;
        S[e] = (h0 != 0 && j < bv) ? h0[stateOff + (size_t) i * V + v0 + j] : 0.0f;
    }
    __syncthreads();
    for (int c = seqChunkStart[n]; c < seqChunkStart[n + 1]; c++) {
        const int t0 = chunkStart[c], len = chunkLen[c];
        const size_t hOff = ((size_t) c * HV + hv) * K * V;
        for (int e = tid; e < K * bv; e += nt) {
            const int i = e / bv, j = e % bv;
            hchunk[hOff + (size_t) i * V + v0 + j] = S[i * KDA_BV + j];
        }
        for (int e = tid; e < len * bv; e += nt) {
            const int r = e / bv, j = e % bv;
            const size_t row = (size_t) (t0 + r) * HV + hv;
            float x = U[row * V + v0 + j];
            for (int i = 0; i < K; i++) {
                x -= W[row * K + i] * S[i * KDA_BV + j];
            }
            Vn[r * KDA_BV + j] = x;
            vnew[row * V + v0 + j] = x;
        }
        __syncthreads();
        const size_t lastRow = ((size_t) (t0 + len - 1) * HV + hv) * K;
        for (int e = tid; e < K * bv; e += nt) {
            const int i = e / bv, j = e % bv;
            const double gl = gam[lastRow + i];
            float x = expG(gl) * S[i * KDA_BV + j];
            for (int r = 0; r < len; r++) {
                const size_t row = ((size_t) (t0 + r) * HV + hv) * K + i;
                x += khat[row] * expDiff(gl, gam[row]) * Vn[r * KDA_BV + j];
            }
            S[i * KDA_BV + j] = x;
        }
        __syncthreads();
    }
    for (int e = tid; e < K * bv; e += nt) {
        const int i = e / bv, j = e % bv;
        ht[stateOff + (size_t) i * V + v0 + j] = S[i * KDA_BV + j];
    }
}

// ---------------------------------------------------------------------------------------------------------
// Forward 4: per (chunk, hv, 32 value columns): O = scale·(q ⊙ exp(Γ)) S_chunk + A_qk V'.
// grid (chunks, HV, ceil(V/32)), block 256.
template <typename T>
__device__ void kdaFwdOutput(const float* qhat, const double* gam, const float* Aqk, const float* hchunk,
                             const float* vnew, const int* chunkStart, const int* chunkLen, int HV, int K, int V,
                             float scale, T* o) {
    const int c = blockIdx.x, hv = blockIdx.y, v0 = blockIdx.z * KDA_BV, tid = threadIdx.x, nt = blockDim.x;
    const int t0 = chunkStart[c], len = chunkLen[c];
    const int bv = min(KDA_BV, V - v0);
    const size_t hOff = ((size_t) c * HV + hv) * K * V;
    for (int e = tid; e < len * bv; e += nt) {
        const int r = e / bv, j = v0 + e % bv;
        const size_t row = (size_t) (t0 + r) * HV + hv;
        float inter = 0.0f;
        for (int i = 0; i < K; i++) {
            inter += qhat[row * K + i] * expG(gam[row * K + i]) * hchunk[hOff + (size_t) i * V + j];
        }
        float intra = 0.0f;
        for (int m = 0; m <= r; m++) {
            intra += Aqk[row * KDA_CHUNK + m] * vnew[((size_t) (t0 + m) * HV + hv) * V + j];
        }
        st(o, row * V + j, scale * inter + intra);
    }
}

// ---------------------------------------------------------------------------------------------------------
// Backward 1: reverse sweep of the state gradient per (sequence, hv, 32 value columns):
//   dV' = Kd dS_end + A_qk^T dO,   dS_start = exp(Γ_last) ⊙ dS_end + Qg^T dO − W^T dV'
// with Kd = K ⊙ exp(Γ_last − Γ), Qg = scale·q ⊙ exp(Γ). Saves dS_end per chunk and dV'.
// grid (N, HV, ceil(V/32)), block 256.
template <typename T>
__device__ void kdaBwdState(const T* dO, const float* dht, const float* Aqk, const float* W, const float* qhat,
                            const float* khat, const double* gam, const int* seqChunkStart, const int* chunkStart,
                            const int* chunkLen, int HV, int K, int V, float scale,
                            float* dhend, float* dvnew, float* dh0) {
    __shared__ float dS[128 * KDA_BV];
    __shared__ float dVn[KDA_CHUNK * KDA_BV];
    const int n = blockIdx.x, hv = blockIdx.y, v0 = blockIdx.z * KDA_BV, tid = threadIdx.x, nt = blockDim.x;
    const int bv = min(KDA_BV, V - v0);
    const size_t stateOff = ((size_t) n * HV + hv) * K * V;
    for (int e = tid; e < K * KDA_BV; e += nt) {
        const int i = e / KDA_BV, j = e % KDA_BV;
        dS[e] = (dht != 0 && j < bv) ? dht[stateOff + (size_t) i * V + v0 + j] : 0.0f;
    }
    __syncthreads();
    for (int c = seqChunkStart[n + 1] - 1; c >= seqChunkStart[n]; c--) {
        const int t0 = chunkStart[c], len = chunkLen[c];
        const size_t hOff = ((size_t) c * HV + hv) * K * V;
        const size_t lastRow = ((size_t) (t0 + len - 1) * HV + hv) * K;
        for (int e = tid; e < K * bv; e += nt) {
            const int i = e / bv, j = e % bv;
            dhend[hOff + (size_t) i * V + v0 + j] = dS[i * KDA_BV + j];
        }
        for (int e = tid; e < len * bv; e += nt) {
            const int r = e / bv, j = e % bv;
            const size_t row = (size_t) (t0 + r) * HV + hv;
            float x = 0.0f;
            for (int i = 0; i < K; i++) {
                x += khat[row * K + i] * expDiff(gam[lastRow + i], gam[row * K + i]) * dS[i * KDA_BV + j];
            }
            for (int m = r; m < len; m++) {
                const size_t rowM = (size_t) (t0 + m) * HV + hv;
                x += Aqk[rowM * KDA_CHUNK + r] * ld(dO, rowM * V + v0 + j);
            }
            dVn[r * KDA_BV + j] = x;
            dvnew[row * V + v0 + j] = x;
        }
        __syncthreads();
        for (int e = tid; e < K * bv; e += nt) {
            const int i = e / bv, j = e % bv;
            float x = expG(gam[lastRow + i]) * dS[i * KDA_BV + j];
            for (int r = 0; r < len; r++) {
                const size_t row = (size_t) (t0 + r) * HV + hv;
                x += scale * qhat[row * K + i] * expG(gam[row * K + i]) * ld(dO, row * V + v0 + j)
                     - W[row * K + i] * dVn[r * KDA_BV + j];
            }
            dS[i * KDA_BV + j] = x;
        }
        __syncthreads();
    }
    if (dh0 != 0) {
        for (int e = tid; e < K * bv; e += nt) {
            const int i = e / bv, j = e % bv;
            dh0[stateOff + (size_t) i * V + v0 + j] = dS[i * KDA_BV + j];
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Backward 2: everything inside one chunk, per (chunk, hv), given S_start (hchunk), dS_end (dhend), V', dV'.
// Writes dv, the gradients of the normalised q/k per value head (dqhat, dkhat), of beta after the sigmoid
// (dbetah) and of the log-space decay (dgam, after the reverse cumsum). Chunk-local matrices [len,K] go
// through token-indexed scratch (sQg, sKd, sW, sBk, sBv, sAqk); block 256,
// dynamic smem (3·64·64 + K) floats.
template <typename T>
__device__ void kdaBwdIntra(const T* v, const T* dO, const float* qhat, const float* khat, const double* gam,
                            const float* betah, const float* Linv, const float* hchunk, const float* vnew,
                            const float* dhend, const float* dvnew, const int* chunkStart, const int* chunkLen,
                            int HV, int K, int V, float scale,
                            float* sQg, float* sKd, float* sW, float* sBk, float* sBv, float* sAqk,
                            float* dv, float* dqhat, float* dkhat, float* dbetah, float* dgam) {
    KDA_DYN_SMEM(float, smem);
    float* Li = smem;                            // [64,64]
    float* dL = Li + KDA_CHUNK * KDA_CHUNK;      // [64,64] dLinv, then dA
    float* M1 = dL + KDA_CHUNK * KDA_CHUNK;      // [64,64] Linv^T dLinv
    float* dGl = M1 + KDA_CHUNK * KDA_CHUNK;     // [K] gradient of Γ_last from the exp(Γ_last) ⊙ S term
    const int c = blockIdx.x, hv = blockIdx.y, tid = threadIdx.x, nt = blockDim.x;
    const int t0 = chunkStart[c], len = chunkLen[c];
    const size_t hOff = ((size_t) c * HV + hv) * K * V;
#define R(r) ((size_t) (t0 + (r)) * HV + hv)
    for (int e = tid; e < KDA_CHUNK * KDA_CHUNK; e += nt) {
        const int r = e / KDA_CHUNK, m = e % KDA_CHUNK;
        Li[e] = r < len ? Linv[R(r) * KDA_CHUNK + m] : 0.0f;
    }
    // Phase 1: products with the states (reductions over V).
    for (int e = tid; e < len * K; e += nt) {
        const int r = e / K, i = e % K;
        float aQg = 0.0f, aKd = 0.0f, aW = 0.0f;
        for (int j = 0; j < V; j++) {
            const float s0 = hchunk[hOff + (size_t) i * V + j];
            aQg += ld(dO, R(r) * V + j) * s0;
            aKd += vnew[R(r) * V + j] * dhend[hOff + (size_t) i * V + j];
            aW -= dvnew[R(r) * V + j] * s0;
        }
        sQg[R(r) * K + i] = aQg;
        sKd[R(r) * K + i] = aKd;
        sW[R(r) * K + i] = aW;
    }
    for (int e = tid; e < len * KDA_CHUNK; e += nt) {
        const int r = e / KDA_CHUNK, m = e % KDA_CHUNK;
        float x = 0.0f;
        if (m <= r) {
            for (int j = 0; j < V; j++) {
                x += ld(dO, R(r) * V + j) * vnew[R(m) * V + j];
            }
        }
        sAqk[R(r) * KDA_CHUNK + m] = x;
    }
    for (int i = tid; i < K; i += nt) {
        float x = 0.0f;
        for (int j = 0; j < V; j++) {
            x += hchunk[hOff + (size_t) i * V + j] * dhend[hOff + (size_t) i * V + j];
        }
        dGl[i] = expG(gam[R(len - 1) * K + i]) * x;
    }
    __syncthreads();
    // Phase 2: through W = Linv diag(β) kg and U = Linv diag(β) V.
    for (int e = tid; e < len * K; e += nt) {
        const int r = e / K, i = e % K;
        float x = 0.0f;
        for (int m = r; m < len; m++) {
            x += Li[m * KDA_CHUNK + r] * sW[R(m) * K + i];
        }
        sBk[R(r) * K + i] = x;
    }
    for (int e = tid; e < len * V; e += nt) {
        const int r = e / V, j = e % V;
        float x = 0.0f;
        for (int m = r; m < len; m++) {
            x += Li[m * KDA_CHUNK + r] * dvnew[R(m) * V + j];
        }
        sBv[R(r) * V + j] = x;
        dv[R(r) * V + j] = betah[R(r)] * x;
    }
    for (int e = tid; e < KDA_CHUNK * KDA_CHUNK; e += nt) {
        const int r = e / KDA_CHUNK, m = e % KDA_CHUNK;
        float x = 0.0f;
        if (r < len && m <= r) {
            for (int i = 0; i < K; i++) {
                x += sW[R(r) * K + i] * khat[R(m) * K + i] * expG(gam[R(m) * K + i]);
            }
            for (int j = 0; j < V; j++) {
                x += dvnew[R(r) * V + j] * ld(v, R(m) * V + j);
            }
            x *= betah[R(m)];
        }
        dL[e] = x;
    }
    __syncthreads();
    // Phase 3: dA = −Linv^T dLinv Linv^T, strictly lower.
    for (int e = tid; e < KDA_CHUNK * KDA_CHUNK; e += nt) {
        const int r = e / KDA_CHUNK, b = e % KDA_CHUNK;
        float x = 0.0f;
        for (int a = r > b ? r : b; a < len; a++) {
            x += Li[a * KDA_CHUNK + r] * dL[a * KDA_CHUNK + b];
        }
        M1[e] = x;
    }
    __syncthreads();
    for (int e = tid; e < KDA_CHUNK * KDA_CHUNK; e += nt) {
        const int r = e / KDA_CHUNK, m = e % KDA_CHUNK;
        float x = 0.0f;
        if (r < len && m < r) {
            for (int b = 0; b <= m; b++) {
                x -= M1[r * KDA_CHUNK + b] * Li[m * KDA_CHUNK + b];
            }
        }
        dL[e] = x;
    }
    __syncthreads();
    // Phase 4: gradients of q, k, Γ per (row, channel); exponents Γ_later − Γ_earlier only.
    for (int e = tid; e < len * K; e += nt) {
        const int r = e / K, i = e % K;
        const double gr = gam[R(r) * K + i];
        const float kr = khat[R(r) * K + i], qr = qhat[R(r) * K + i];
        const double gl = gam[R(len - 1) * K + i];
        const float er = expG(gr), el = expDiff(gl, gr), br = betah[R(r)];
        const float bk = sBk[R(r) * K + i], dqg = sQg[R(r) * K + i], dkd = sKd[R(r) * K + i];
        float dk = br * bk * er + dkd * el;
        float dq = scale * dqg * er;
        float dg = br * bk * kr * er + dqg * scale * qr * er - dkd * kr * el;
        for (int m = 0; m <= r; m++) {
            const float km = khat[R(m) * K + i];
            const float f = expDiff(gr, gam[R(m) * K + i]);
            const float daq = scale * sAqk[R(r) * KDA_CHUNK + m];
            dq += daq * km * f;
            dg += daq * qr * km * f;
            if (m < r) {
                const float da = dL[r * KDA_CHUNK + m] * br;
                dk += da * km * f;
                dg += da * kr * km * f;
            }
        }
        for (int m = r; m < len; m++) {
            const float km = khat[R(m) * K + i], qm = qhat[R(m) * K + i];
            const float f = expDiff(gam[R(m) * K + i], gr);
            const float daq = scale * sAqk[R(m) * KDA_CHUNK + r];
            dk += daq * qm * f;
            dg -= daq * qm * kr * f;
            if (m > r) {
                const float da = dL[m * KDA_CHUNK + r] * betah[R(m)];
                dk += da * km * f;
                dg -= da * km * kr * f;
            }
        }
        if (r == len - 1) {
            dg += dGl[i];
            for (int m = 0; m < len; m++) {
                const double gm = gam[R(m) * K + i];
                dg += sKd[R(m) * K + i] * khat[R(m) * K + i] * expDiff(gl, gm);
            }
        }
        dqhat[R(r) * K + i] = dq;
        dkhat[R(r) * K + i] = dk;
        dgam[R(r) * K + i] = dg;
    }
    for (int r = tid; r < len; r += nt) {
        float x = 0.0f;
        for (int i = 0; i < K; i++) {
            x += khat[R(r) * K + i] * expG(gam[R(r) * K + i]) * sBk[R(r) * K + i];
        }
        for (int j = 0; j < V; j++) {
            x += ld(v, R(r) * V + j) * sBv[R(r) * V + j];
        }
        for (int m = 0; m < r; m++) {
            float p = 0.0f;
            for (int i = 0; i < K; i++) {
                p += khat[R(r) * K + i] * khat[R(m) * K + i] * expDiff(gam[R(r) * K + i], gam[R(m) * K + i]);
            }
            x += dL[r * KDA_CHUNK + m] * p;
        }
        dbetah[R(r)] = x;
    }
    __syncthreads();
    // Phase 5: Γ is a cumsum of the decay, so the decay's gradient is the reverse cumsum of dΓ.
    for (int i = tid; i < K; i += nt) {
        float acc = 0.0f;
        for (int r = len - 1; r >= 0; r--) {
            acc += dgam[R(r) * K + i];
            dgam[R(r) * K + i] = acc;
        }
    }
#undef R
}

// ---------------------------------------------------------------------------------------------------------
// Backward 3: per (chunk, hv): gate and beta-sigmoid backward. dg [T,HV,K] gets the gradient of the stored g;
// dalogTok [T,HV] the per-token contribution to dA_log (summed by kdaBwdParams). grid (chunks, HV), block 128.
template <typename T>
__device__ void kdaBwdGate(const T* g, const T* beta, const float* aLog, const float* dtBias, const float* dgam,
                           const float* dbetah, const int* chunkStart, const int* chunkLen, int HV, int K,
                           int gate, float lowerBound, int betaSigmoid, float* dg, float* dbeta, float* dalogTok) {
    __shared__ float red[128];
    const int c = blockIdx.x, hv = blockIdx.y, d = threadIdx.x;
    const int t0 = chunkStart[c], len = chunkLen[c];
    const float expA = aLog != 0 ? expf(aLog[hv]) : 1.0f;
    const float bias = (gate != KDA_GATE_NONE && d < K) ? dtBias[(size_t) hv * K + d] : 0.0f;
    for (int r = 0; r < len; r++) {
        const size_t tv = (size_t) (t0 + r) * HV + hv;
        float contrib = 0.0f;
        if (d < K) {
            const size_t o = tv * K + d;
            const float dd = dgam[o];
            float dx;
            if (gate == KDA_GATE_NONE) {
                dx = dd;
            } else if (gate == KDA_GATE_SOFTPLUS) {
                const float x = ld(g, o) + bias;
                dx = -dd * expA * sigmoidf(x);
                contrib = -dd * expA * softplusf(x);        // d decay / d A_log = decay
            } else {
                const float x = ld(g, o) + bias, z = expA * x, s = sigmoidf(z);
                const float dz = dd * lowerBound * s * (1.0f - s);
                dx = dz * expA;
                contrib = dz * z;
            }
            dg[o] = dx;
        }
        if (gate != KDA_GATE_NONE && aLog != 0) {
            const float sum = blockSum(contrib, red);
            if (d == 0) {
                dalogTok[tv] = sum;
            }
        }
        if (d == 0) {
            float db = dbetah[tv];
            if (betaSigmoid) {
                const float s = sigmoidf(ld(beta, tv));
                db *= s * (1.0f - s);
            }
            dbeta[tv] = db;
        }
    }
}

// Backward 4: dA_log [HV] and dt_bias [HV·K] sums over all tokens (padding rows are zero).
// grid (HV), block 128.
__device__ void kdaBwdParams(const float* dg, const float* dalogTok, int T, int HV, int K,
                             float* dALog, float* dDtBias) {
    __shared__ float red[128];
    const int hv = blockIdx.x, tid = threadIdx.x;
    if (dDtBias != 0) {
        for (int i = tid; i < K; i += blockDim.x) {
            float x = 0.0f;
            for (int t = 0; t < T; t++) {
                x += dg[((size_t) t * HV + hv) * K + i];
            }
            dDtBias[(size_t) hv * K + i] = x;
        }
    }
    if (dALog != 0) {
        float x = 0.0f;
        for (int t = tid; t < T; t += blockDim.x) {
            x += dalogTok[(size_t) t * HV + hv];
        }
        const float sum = blockSum(x, red);
        if (tid == 0) {
            dALog[hv] = sum;
        }
    }
}

// Backward 5: per (chunk, h): sum the value heads of a group, then the l2norm backward
// dx = (dy − y (y·dy)) / ‖x‖. grid (chunks, H), block 128.
template <typename T>
__device__ void kdaBwdQk(const T* q, const T* k, const float* dqhat, const float* dkhat, const int* chunkStart,
                         const int* chunkLen, int H, int HV, int K, int l2norm, float* dq, float* dk) {
    __shared__ float red[128];
    const int c = blockIdx.x, h = blockIdx.y, d = threadIdx.x, G = HV / H;
    const int t0 = chunkStart[c], len = chunkLen[c];
    for (int r = 0; r < len; r++) {
        const int t = t0 + r;
        float gq = 0.0f, gk = 0.0f;
        if (d < K) {
            for (int hv = h * G; hv < (h + 1) * G; hv++) {
                gq += dqhat[((size_t) t * HV + hv) * K + d];
                gk += dkhat[((size_t) t * HV + hv) * K + d];
            }
        }
        const size_t o = ((size_t) t * H + h) * K + d;
        if (l2norm) {
            const float xq = d < K ? ld(q, o) : 0.0f, xk = d < K ? ld(k, o) : 0.0f;
            const float rq = 1.0f / sqrtf(blockSum(xq * xq, red) + 1e-6f);
            const float rk = 1.0f / sqrtf(blockSum(xk * xk, red) + 1e-6f);
            const float dotq = blockSum(xq * rq * gq, red);
            const float dotk = blockSum(xk * rk * gk, red);
            gq = rq * (gq - xq * rq * dotq);
            gk = rk * (gk - xk * rk * dotk);
        }
        if (d < K) {
            dq[o] = gq;
            dk[o] = gk;
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Entry points: one per kernel and input dtype (f32, or bf16 with fp32 accumulation and fp32 scratch).
#define KDA_DTYPE_ENTRIES(SUF, T)                                                                              \
extern "C" __global__ void __launch_bounds__(128) kda_fwd_prep_##SUF(                                          \
        const T* q, const T* k, const T* g, const T* beta, const float* aLog, const float* dtBias,             \
        const int* chunkStart, const int* chunkLen, int H, int HV, int K, int gate, float lowerBound,         \
        int l2norm, int betaSigmoid, float* qhat, float* khat, double* gam, float* betah) {                    \
    kdaFwdPrep<T>(q, k, g, beta, aLog, dtBias, chunkStart, chunkLen, H, HV, K, gate, lowerBound, l2norm,     \
                  betaSigmoid, qhat, khat, gam, betah);                                                        \
}                                                                                                              \
extern "C" __global__ void __launch_bounds__(256) kda_fwd_intra_##SUF(                                         \
        const T* v, const float* qhat, const float* khat, const double* gam, const float* betah,               \
        const int* chunkStart, const int* chunkLen, int HV, int K, int V, float scale,                        \
        float* Aqk, float* Linv, float* W, float* U) {                                                         \
    kdaFwdIntra<T>(v, qhat, khat, gam, betah, chunkStart, chunkLen, HV, K, V, scale, Aqk, Linv, W, U);        \
}                                                                                                              \
extern "C" __global__ void __launch_bounds__(256) kda_fwd_output_##SUF(                                        \
        const float* qhat, const double* gam, const float* Aqk, const float* hchunk, const float* vnew,        \
        const int* chunkStart, const int* chunkLen, int HV, int K, int V, float scale, T* o) {                \
    kdaFwdOutput<T>(qhat, gam, Aqk, hchunk, vnew, chunkStart, chunkLen, HV, K, V, scale, o);                  \
}                                                                                                              \
extern "C" __global__ void __launch_bounds__(256) kda_bwd_state_##SUF(                                         \
        const T* dO, const float* dht, const float* Aqk, const float* W, const float* qhat,                   \
        const float* khat, const double* gam, const int* seqChunkStart, const int* chunkStart,                 \
        const int* chunkLen, int HV, int K, int V, float scale, float* dhend, float* dvnew, float* dh0) {     \
    kdaBwdState<T>(dO, dht, Aqk, W, qhat, khat, gam, seqChunkStart, chunkStart, chunkLen, HV, K, V, scale,   \
                   dhend, dvnew, dh0);                                                                         \
}                                                                                                              \
extern "C" __global__ void __launch_bounds__(256) kda_bwd_intra_##SUF(                                         \
        const T* v, const T* dO, const float* qhat, const float* khat, const double* gam,                      \
        const float* betah, const float* Linv, const float* hchunk, const float* vnew, const float* dhend,    \
        const float* dvnew, const int* chunkStart, const int* chunkLen, int HV, int K, int V, float scale,    \
        float* sQg, float* sKd, float* sW, float* sBk, float* sBv, float* sAqk,                               \
        float* dv, float* dqhat, float* dkhat, float* dbetah, float* dgam) {                                  \
    kdaBwdIntra<T>(v, dO, qhat, khat, gam, betah, Linv, hchunk, vnew, dhend, dvnew, chunkStart, chunkLen,    \
                   HV, K, V, scale, sQg, sKd, sW, sBk, sBv, sAqk, dv, dqhat, dkhat, dbetah, dgam);            \
}                                                                                                              \
extern "C" __global__ void __launch_bounds__(128) kda_bwd_gate_##SUF(                                          \
        const T* g, const T* beta, const float* aLog, const float* dtBias, const float* dgam,                 \
        const float* dbetah, const int* chunkStart, const int* chunkLen, int HV, int K, int gate,             \
        float lowerBound, int betaSigmoid, float* dg, float* dbeta, float* dalogTok) {                        \
    kdaBwdGate<T>(g, beta, aLog, dtBias, dgam, dbetah, chunkStart, chunkLen, HV, K, gate, lowerBound,        \
                  betaSigmoid, dg, dbeta, dalogTok);                                                           \
}                                                                                                              \
extern "C" __global__ void __launch_bounds__(128) kda_bwd_qk_##SUF(                                            \
        const T* q, const T* k, const float* dqhat, const float* dkhat, const int* chunkStart,                \
        const int* chunkLen, int H, int HV, int K, int l2norm, float* dq, float* dk) {                         \
    kdaBwdQk<T>(q, k, dqhat, dkhat, chunkStart, chunkLen, H, HV, K, l2norm, dq, dk);                          \
}

KDA_DTYPE_ENTRIES(f32, float)
KDA_DTYPE_ENTRIES(bf16, bf16_t)

extern "C" __global__ void __launch_bounds__(256) kda_fwd_state(
        const float* W, const float* U, const float* khat, const double* gam, const float* h0,
        const int* seqChunkStart, const int* chunkStart, const int* chunkLen, int HV, int K, int V,
        float* hchunk, float* vnew, float* ht) {
    kdaFwdState(W, U, khat, gam, h0, seqChunkStart, chunkStart, chunkLen, HV, K, V, hchunk, vnew, ht);
}

extern "C" __global__ void __launch_bounds__(128) kda_bwd_params(
        const float* dg, const float* dalogTok, int T, int HV, int K, float* dALog, float* dDtBias) {
    kdaBwdParams(dg, dalogTok, T, HV, K, dALog, dDtBias);
}
