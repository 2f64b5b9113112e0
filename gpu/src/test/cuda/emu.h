// CPU emulation of the tiny CUDA subset the kdapack kernels use, so that the kernel sources themselves can be
// executed and checked against the golden vectors on a machine without a GPU. Blocks run one after another
// (so a function-static array is exactly one block's shared memory); the threads of a block are real threads
// meeting at a std::barrier for __syncthreads. Not a performance model, only a semantic one.
#pragma once
#define KDA_EMULATION 1
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;
inline std::barrier<>* emuBarrier = nullptr;
inline std::vector<float> emuDynSmem;

inline void __syncthreads() { emuBarrier->arrive_and_wait(); }
using std::min;

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(n)
#define KDA_DYN_SMEM(type, name) type* name = reinterpret_cast<type*>(emuDynSmem.data())

// One thread per CUDA thread for the whole launch; they walk the blocks in the same order and meet at a
// barrier after each block, so a block's shared memory (function-static arrays) is reused safely.
template <typename F, typename... A>
void emuLaunch(dim3 grid, dim3 block, size_t smemBytes, F fn, A... args) {
    gridDim = grid;
    blockDim = block;
    emuDynSmem.assign(smemBytes / 4 + 1, NAN);   // poisoned: reading unwritten shared memory shows as NaN
    std::barrier<> bar(block.x);
    emuBarrier = &bar;
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < block.x; t++) {
        threads.emplace_back([=, &bar] {
            threadIdx = dim3(t, 0, 0);
            for (unsigned z = 0; z < grid.z; z++)
                for (unsigned y = 0; y < grid.y; y++)
                    for (unsigned x = 0; x < grid.x; x++) {
                        blockIdx = dim3(x, y, z);
                        fn(args...);
                        bar.arrive_and_wait();
                    }
        });
    }
    for (auto& th : threads) th.join();
}
