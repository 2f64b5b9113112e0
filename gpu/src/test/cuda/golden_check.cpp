// Runs the CUDA kernel sources (kda.cu, conv.cu) through the CPU emulation of emu.h on every golden case and
// prints the relative error ‖out − ref‖ / ‖ref‖ of each output and gradient. The launch sequence mirrors
// io.kdapack.gpu.CudaKdaBackend / CudaConvBackend (same kernels, grids, blocks, shared memory, memsets).
// Usage: golden_check <dir with kda/ and conv/> [bf16]   exit status 1 when a tolerance is missed.
#include "emu.h"
#include "../../main/cuda/kda.cu"
#include "../../main/cuda/conv.cu"

#include <cstdint>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

struct Tens {
    std::string dtype;
    std::vector<long> shape;
    std::vector<char> bytes;
    std::vector<float> f() const {
        size_t n = dtype == "F64" ? bytes.size() / 8 : bytes.size() / 4;
        std::vector<float> out(n);
        for (size_t i = 0; i < n; i++) {
            if (dtype == "F64") { double d; memcpy(&d, &bytes[i * 8], 8); out[i] = (float) d; }
            else if (dtype == "F32") { memcpy(&out[i], &bytes[i * 4], 4); }
            else { int32_t v; memcpy(&v, &bytes[i * 4], 4); out[i] = (float) v; }
        }
        return out;
    }
    std::vector<double> d() const {
        size_t n = bytes.size() / 8;
        std::vector<double> out(n);
        memcpy(out.data(), bytes.data(), n * 8);
        return out;
    }
    std::vector<int> i() const {
        std::vector<int> out(bytes.size() / 4);
        memcpy(out.data(), bytes.data(), out.size() * 4);
        return out;
    }
};

struct File {
    std::map<std::string, Tens> t;
    std::map<std::string, std::string> meta;
    bool has(const std::string& n) const { return t.count(n) > 0; }
};

// Minimal reader for the golden files' safetensors header (flat JSON of strings, arrays and objects).
static File readSafetensors(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    uint64_t n;
    in.read((char*) &n, 8);
    std::string h(n, ' ');
    in.read(&h[0], n);
    std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    File f;
    auto str = [&](size_t& q) { size_t a = h.find('"', q); size_t b = h.find('"', a + 1); q = b + 1; return h.substr(a + 1, b - a - 1); };
    size_t q = h.find('{') + 1;
    while (true) {
        size_t nextQuote = h.find('"', q);
        if (nextQuote == std::string::npos) break;
        std::string name = str(q);
        size_t ob = h.find('{', q), cb = h.find('}', ob);
        std::string body = h.substr(ob, cb - ob + 1);
        q = cb + 1;
        if (name == "__metadata__") {
            size_t r = 0;
            auto bstr = [&](size_t& s) { size_t a = body.find('"', s); size_t b = body.find('"', a + 1); s = b + 1; return body.substr(a + 1, b - a - 1); };
            while (body.find('"', r) != std::string::npos) { std::string k = bstr(r); std::string v = bstr(r); f.meta[k] = v; }
            continue;
        }
        Tens t;
        size_t dt = body.find("\"dtype\"");
        size_t a = body.find('"', dt + 7), b = body.find('"', a + 1);
        t.dtype = body.substr(a + 1, b - a - 1);
        size_t sh = body.find('[', body.find("\"shape\"")), she = body.find(']', sh);
        std::stringstream ss(body.substr(sh + 1, she - sh - 1));
        std::string tok;
        while (std::getline(ss, tok, ',')) if (tok.find_first_not_of(' ') != std::string::npos) t.shape.push_back(std::stol(tok));
        size_t of = body.find('[', body.find("\"data_offsets\"")), ofe = body.find(']', of);
        std::stringstream so(body.substr(of + 1, ofe - of - 1));
        std::getline(so, tok, ','); long beg = std::stol(tok);
        std::getline(so, tok, ','); long end = std::stol(tok);
        t.bytes.assign(data.begin() + beg, data.begin() + end);
        f.t[name] = t;
    }
    return f;
}

static bool useBf16 = false;
static int failures = 0;

static double relErr(const std::vector<float>& out, const std::vector<double>& ref) {
    double num = 0, den = 0;
    for (size_t i = 0; i < ref.size(); i++) {
        double d = (double) out[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
    }
    if (std::isnan(num)) return INFINITY;
    return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

static void check(const std::string& c, const std::string& name, const std::vector<float>& out, const File& f,
                  double tol) {
    std::vector<double> ref = f.t.at(name).d();
    if (out.size() != ref.size()) { printf("  %-40s %-8s SIZE MISMATCH %zu vs %zu\n", c.c_str(), name.c_str(), out.size(), ref.size()); failures++; return; }
    double e = relErr(out, ref);
    bool ok = e <= tol;
    if (!ok) failures++;
    printf("  %-40s %-10s rel.err %.3e  (tol %.0e) %s\n", c.c_str(), name.c_str(), e, tol, ok ? "ok" : "FAIL");
}

// Device-side buffers are plain vectors; unwritten scratch is NaN so a read of it shows.
static std::vector<float> scratch(size_t n) { return std::vector<float>(n, NAN); }

template <typename T> static std::vector<T> toDev(const std::vector<float>& v);
template <> std::vector<float> toDev<float>(const std::vector<float>& v) { return v; }
template <> std::vector<bf16_t> toDev<bf16_t>(const std::vector<float>& v) {
    std::vector<bf16_t> o(v.size());
    for (size_t i = 0; i < v.size(); i++) st(o.data(), i, v[i]);
    return o;
}
template <typename T> static std::vector<float> fromDev(const std::vector<T>& v) {
    std::vector<float> o(v.size());
    for (size_t i = 0; i < v.size(); i++) o[i] = ld(v.data(), i);
    return o;
}

struct Chunks {
    std::vector<int> start, len, seqChunkStart;
};

// Mirror of io.kdapack.gpu.ChunkTable: chunks of 64 that never straddle a sequence, no padding.
static Chunks chunkTable(const std::vector<int>& starts, const std::vector<int>& ends) {
    Chunks c;
    for (size_t n = 0; n < starts.size(); n++) {
        c.seqChunkStart.push_back((int) c.start.size());
        for (int s = starts[n]; s < ends[n]; s += KDA_CHUNK) {
            c.start.push_back(s);
            c.len.push_back(std::min(KDA_CHUNK, ends[n] - s));
        }
    }
    c.seqChunkStart.push_back((int) c.start.size());
    return c;
}

static const float* ptr(const std::vector<float>& v) { return v.empty() ? nullptr : v.data(); }

template <typename T, typename FPrep, typename FIntra, typename FOut, typename FBState, typename FBIntra,
          typename FBGate, typename FBQk>
static void runKda(const std::string& name, const File& f, FPrep prep, FIntra intra, FOut outK, FBState bstate,
                   FBIntra bintra, FBGate bgate, FBQk bqk) {
    auto m = [&](const char* k) { return f.meta.at(k); };
    const int H = std::stoi(m("H")), HV = std::stoi(m("HV")), K = std::stoi(m("K")), V = std::stoi(m("V"));
    const int B = std::stoi(m("B")), Tr = std::stoi(m("T"));
    const int Tn = B * Tr;
    const float scale = std::stof(m("scale"));
    const int l2 = m("use_qk_l2norm_in_kernel") == "true";
    const int betaSig = m("use_beta_sigmoid_in_kernel") == "true";
    int gate = KDA_GATE_NONE;
    float lb = 0;
    if (m("use_gate_in_kernel") == "true") {
        if (m("lower_bound") == "none") gate = KDA_GATE_SOFTPLUS;
        else { gate = KDA_GATE_LOWER_BOUND; lb = std::stof(m("lower_bound")); }
    }
    std::vector<int> starts, ends;
    if (f.has("cu_seqlens")) {
        auto cu = f.t.at("cu_seqlens").i();
        for (size_t n = 0; n + 1 < cu.size(); n++) { starts.push_back(cu[n]); ends.push_back(cu[n + 1]); }
    } else {
        auto sb = f.t.at("seg_bounds").i();
        for (size_t n = 0; n < sb.size() / 3; n++) { starts.push_back(sb[3 * n] * Tr + sb[3 * n + 1]); ends.push_back(sb[3 * n] * Tr + sb[3 * n + 2]); }
    }
    const int N = (int) starts.size();
    Chunks ch = chunkTable(starts, ends);
    const int C = (int) ch.start.size();
    const int nvb = (V + KDA_BV - 1) / KDA_BV;
    auto q = toDev<T>(f.t.at("q").f()), k = toDev<T>(f.t.at("k").f()), v = toDev<T>(f.t.at("v").f());
    auto g = toDev<T>(f.t.at("g").f()), beta = toDev<T>(f.t.at("beta").f()), dO = toDev<T>(f.t.at("do").f());
    std::vector<float> aLog = f.has("A_log") ? f.t.at("A_log").f() : std::vector<float>();
    std::vector<float> dtBias = f.has("dt_bias") ? f.t.at("dt_bias").f() : std::vector<float>();
    std::vector<float> h0 = f.has("h0") ? f.t.at("h0").f() : std::vector<float>();
    std::vector<float> dht = f.t.at("dht").f();
    size_t tk = (size_t) Tn * HV * K, tv = (size_t) Tn * HV * V, tc = (size_t) Tn * HV * KDA_CHUNK;
    auto qhat = scratch(tk), khat = scratch(tk), betah = scratch((size_t) Tn * HV);
    std::vector<double> gam(tk, NAN);
    auto Aqk = scratch(tc), Linv = scratch(tc), W = scratch(tk), U = scratch(tv);
    auto hchunk = scratch((size_t) C * HV * K * V), vnew = scratch(tv);
    std::vector<T> o(tv, T(0));
    std::vector<float> ht((size_t) N * HV * K * V, NAN);
    // Forward: the same sequence as CudaKdaBackend.forward.
    auto forward = [&] {
        if (C > 0) {
            emuLaunch(dim3(C, HV), dim3(128), 0, prep, q.data(), k.data(), g.data(), beta.data(), ptr(aLog), ptr(dtBias),
                      ch.start.data(), ch.len.data(), H, HV, K, gate, lb, l2, betaSig, qhat.data(), khat.data(), gam.data(), betah.data());
            emuLaunch(dim3(C, HV), dim3(256), (size_t) (3 * KDA_SUB * K + 2 * KDA_CHUNK * KDA_CHUNK) * 4, intra, v.data(), (const float*) qhat.data(),
                      (const float*) khat.data(), (const double*) gam.data(), (const float*) betah.data(), ch.start.data(), ch.len.data(), HV, K, V, scale,
                      Aqk.data(), Linv.data(), W.data(), U.data());
        }
        if (N > 0) {
            emuLaunch(dim3(N, HV, nvb), dim3(256), 0, kda_fwd_state, (const float*) W.data(), (const float*) U.data(),
                      (const float*) khat.data(), (const double*) gam.data(), ptr(h0), ch.seqChunkStart.data(), ch.start.data(), ch.len.data(),
                      HV, K, V, hchunk.data(), vnew.data(), ht.data());
        }
    };
    forward();
    if (C > 0) {
        emuLaunch(dim3(C, HV, nvb), dim3(256), 0, outK, (const float*) qhat.data(), (const double*) gam.data(), (const float*) Aqk.data(),
                  (const float*) hchunk.data(), (const float*) vnew.data(), ch.start.data(), ch.len.data(), HV, K, V, scale, o.data());
    }
    const double tolO = useBf16 ? 2e-2 : 1e-5, tolG = useBf16 ? 5e-2 : 1e-4;
    check(name, "o", fromDev(o), f, tolO);
    check(name, "ht", ht, f, tolO);
    // Backward.
    auto dhend = scratch((size_t) C * HV * K * V), dvnew = scratch(tv);
    std::vector<float> dh0 = h0.empty() ? std::vector<float>() : scratch(h0.size());
    auto sQg = scratch(tk), sKd = scratch(tk), sW = scratch(tk), sBk = scratch(tk), sBv = scratch(tv), sAqk = scratch(tc);
    std::vector<float> dv(tv, 0.f), dqhat = scratch(tk), dkhat = scratch(tk), dbetah = scratch((size_t) Tn * HV), dgam = scratch(tk);
    std::vector<float> dg(tk, 0.f), dbeta((size_t) Tn * HV, 0.f), dalogTok((size_t) Tn * HV, 0.f);
    std::vector<float> dq((size_t) Tn * H * K, 0.f), dk((size_t) Tn * H * K, 0.f);
    std::vector<float> dALog(aLog.size(), NAN), dDtBias(dtBias.size(), NAN);
    if (N > 0) {
        emuLaunch(dim3(N, HV, nvb), dim3(256), 0, bstate, (const T*) dO.data(), ptr(dht), (const float*) Aqk.data(), (const float*) W.data(),
                  (const float*) qhat.data(), (const float*) khat.data(), (const double*) gam.data(), ch.seqChunkStart.data(), ch.start.data(),
                  ch.len.data(), HV, K, V, scale, dhend.data(), dvnew.data(), dh0.empty() ? nullptr : dh0.data());
    }
    if (C > 0) {
        emuLaunch(dim3(C, HV), dim3(256), (size_t) (3 * KDA_CHUNK * KDA_CHUNK + K) * 4, bintra, (const T*) v.data(), (const T*) dO.data(),
                  (const float*) qhat.data(), (const float*) khat.data(), (const double*) gam.data(), (const float*) betah.data(),
                  (const float*) Linv.data(), (const float*) hchunk.data(), (const float*) vnew.data(), (const float*) dhend.data(),
                  (const float*) dvnew.data(), ch.start.data(), ch.len.data(), HV, K, V, scale, sQg.data(), sKd.data(), sW.data(), sBk.data(),
                  sBv.data(), sAqk.data(), dv.data(), dqhat.data(), dkhat.data(), dbetah.data(), dgam.data());
        emuLaunch(dim3(C, HV), dim3(128), 0, bgate, (const T*) g.data(), (const T*) beta.data(), ptr(aLog), ptr(dtBias),
                  (const float*) dgam.data(), (const float*) dbetah.data(), ch.start.data(), ch.len.data(), HV, K, gate, lb, betaSig,
                  dg.data(), dbeta.data(), dalogTok.data());
    }
    if (!aLog.empty() || !dtBias.empty()) {
        emuLaunch(dim3(HV), dim3(128), 0, kda_bwd_params, (const float*) dg.data(), (const float*) dalogTok.data(), Tn, HV, K,
                  aLog.empty() ? nullptr : dALog.data(), dtBias.empty() ? nullptr : dDtBias.data());
    }
    if (C > 0) {
        emuLaunch(dim3(C, H), dim3(128), 0, bqk, (const T*) q.data(), (const T*) k.data(), (const float*) dqhat.data(),
                  (const float*) dkhat.data(), ch.start.data(), ch.len.data(), H, HV, K, l2, dq.data(), dk.data());
    }
    check(name, "dq", dq, f, tolG);
    check(name, "dk", dk, f, tolG);
    check(name, "dv", dv, f, tolG);
    check(name, "dg", dg, f, tolG);
    check(name, "dbeta", dbeta, f, tolG);
    if (!h0.empty()) check(name, "dh0", dh0, f, tolG);
    if (!aLog.empty()) check(name, "dA_log", dALog, f, tolG);
    if (!dtBias.empty()) check(name, "ddt_bias", dDtBias, f, tolG);
}

template <typename T, typename FFwd, typename FFin, typename FDz, typename FPar>
static void runConv(const std::string& name, const File& f, FFwd fwd, FFin fin, FDz fdz, FPar fpar) {
    auto m = [&](const char* k) { return f.meta.at(k); };
    const int Tn = std::stoi(m("T")), D = std::stoi(m("D")), W = std::stoi(m("W"));
    const int silu = m("activation") == "silu";
    auto cu = f.t.at("cu_seqlens").i();
    const int N = (int) cu.size() - 1;
    std::vector<int> seqStart(cu.begin(), cu.end() - 1), seqEnd(cu.begin() + 1, cu.end()), tokSeq(Tn, -1);
    for (int n = 0; n < N; n++) for (int t = seqStart[n]; t < seqEnd[n]; t++) tokSeq[t] = n;
    auto x = toDev<T>(f.t.at("x").f()), dy = toDev<T>(f.t.at("dy").f());
    auto w = f.t.at("weight").f();
    std::vector<float> bias = f.has("bias") ? f.t.at("bias").f() : std::vector<float>();
    std::vector<float> s0 = f.has("initial_state") ? f.t.at("initial_state").f() : std::vector<float>();
    std::vector<T> y((size_t) Tn * D);
    std::vector<float> fs((size_t) N * D * W, NAN), dz = scratch((size_t) Tn * D), dx((size_t) Tn * D, NAN);
    std::vector<float> dw((size_t) D * W, NAN), db(D, NAN), ds((size_t) N * D * W, NAN);
    const unsigned gx = (D + 127) / 128;
    emuLaunch(dim3(Tn, gx), dim3(128), 0, fwd, (const T*) x.data(), (const float*) w.data(), ptr(bias), ptr(s0), (const int*) tokSeq.data(),
              (const int*) seqStart.data(), D, W, silu, y.data());
    if (N > 0) emuLaunch(dim3(N, gx), dim3(128), 0, fin, (const T*) x.data(), ptr(s0), (const int*) seqStart.data(), (const int*) seqEnd.data(), D, W, fs.data());
    emuLaunch(dim3(Tn, gx), dim3(128), 0, fdz, (const T*) x.data(), (const float*) w.data(), ptr(bias), ptr(s0), (const T*) dy.data(),
              (const int*) tokSeq.data(), (const int*) seqStart.data(), D, W, silu, dz.data());
    emuLaunch(dim3(Tn, gx), dim3(128), 0, conv_bwd_dx, (const float*) dz.data(), (const float*) w.data(), (const int*) tokSeq.data(),
              (const int*) seqEnd.data(), D, W, dx.data());
    emuLaunch(dim3(D), dim3(256), 0, fpar, (const T*) x.data(), ptr(s0), (const float*) dz.data(), (const int*) tokSeq.data(),
              (const int*) seqStart.data(), Tn, D, W, dw.data(), bias.empty() ? nullptr : db.data());
    if (N > 0) emuLaunch(dim3(N, gx), dim3(128), 0, conv_bwd_state, (const float*) dz.data(), (const float*) w.data(), (const int*) seqStart.data(),
                         (const int*) seqEnd.data(), D, W, ds.data());
    const double tolO = useBf16 ? 2e-2 : 1e-5, tolG = useBf16 ? 5e-2 : 1e-4;
    check(name, "y", fromDev(y), f, tolO);
    check(name, "final_state", fs, f, tolO);
    check(name, "dx", dx, f, tolG);
    check(name, "dweight", dw, f, tolG);
    if (!bias.empty()) check(name, "dbias", db, f, tolG);
    if (!s0.empty()) check(name, "dinitial_state", ds, f, tolG);
}

static std::vector<std::string> list(const std::string& dir) {
    std::vector<std::string> out;
    DIR* d = opendir(dir.c_str());
    if (!d) return out;
    while (dirent* e = readdir(d)) {
        std::string n = e->d_name;
        if (n.size() > 12 && n.substr(n.size() - 12) == ".safetensors") out.push_back(n);
    }
    closedir(d);
    std::sort(out.begin(), out.end());
    return out;
}

int main(int argc, char** argv) {
    std::string dir = argc > 1 ? argv[1] : ".";
    useBf16 = argc > 2 && std::string(argv[2]) == "bf16";
    printf("kernel emulation on the golden vectors (%s inputs)\n", useBf16 ? "bf16" : "fp32");
    int cases = 0;
    for (auto& n : list(dir + "/kda")) {
        File f = readSafetensors(dir + "/kda/" + n);
        if (useBf16) runKda<bf16_t>(n, f, kda_fwd_prep_bf16, kda_fwd_intra_bf16, kda_fwd_output_bf16, kda_bwd_state_bf16, kda_bwd_intra_bf16, kda_bwd_gate_bf16, kda_bwd_qk_bf16);
        else runKda<float>(n, f, kda_fwd_prep_f32, kda_fwd_intra_f32, kda_fwd_output_f32, kda_bwd_state_f32, kda_bwd_intra_f32, kda_bwd_gate_f32, kda_bwd_qk_f32);
        cases++;
    }
    for (auto& n : list(dir + "/conv")) {
        File f = readSafetensors(dir + "/conv/" + n);
        if (useBf16) runConv<bf16_t>(n, f, conv_fwd_bf16, conv_final_state_bf16, conv_bwd_dz_bf16, conv_bwd_params_bf16);
        else runConv<float>(n, f, conv_fwd_f32, conv_final_state_f32, conv_bwd_dz_f32, conv_bwd_params_f32);
        cases++;
    }
    printf("%d cases, %d checks failed\n", cases, failures);
    return cases == 15 && failures == 0 ? 0 : 1;
}
