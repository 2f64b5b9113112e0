#!/usr/bin/env python3
"""Which part of a model step's CPU time runs on one thread whatever the pool's size (docs/kda.md, "Serial sections").

Reads the JSON of `jfr print --json --events jdk.CPUTimeSample REC.jfr` (a sample per few milliseconds of a thread's
CPU time: a thread that waits for a core or is parked gets none, so the host's load does not move the fractions) and
classifies each sample of the step by its stack:

- serial: on the thread that drives the step (its stack holds `HybridModel.run`, the benchmark's or the trainer's step,
  or the optimizer), with no parallel region (a fork-join task or a parallel stream) between that frame and the leaf;
- parallel: everything else of the step (inside a region, or on a pool worker running stolen tasks).

Samples of `MatmulProbe`'s pool (a pool whose samples never leave `io.kdapack.core.linalg`), of the set-up and of the
JVM's own threads are left out. Prints the serial fraction and the serial samples by the first model-level frame.

    python3 scripts/serial-profile.py REC.json [FROM_ISO_TIME]
"""
import collections
import json
import re
import sys

DRIVERS = ('io.kdapack.core.model.HybridModel.run', 'io.kdapack.bench.ModelBenchmark$Step.',
           'io.kdapack.training.Trainer.', 'io.kdapack.core.optim.TrainingOptimizer.step')
REGIONS = ('java.util.stream.', 'java.util.concurrent.ForkJoinTask.doExec', 'java.util.concurrent.ForkJoinTask.invokeAll')
SET_UP = ('io.kdapack.core.model.ModelInit', 'io.kdapack.config.', 'io.kdapack.bench.ModelBenchmark.randomBatch',
          'io.kdapack.bench.ModelBenchmark$Step.<init>', 'io.kdapack.core.model.HybridModel.<init>')
SECTIONS = ('.core.nn.', '.core.model.', '.core.optim.', '.core.loss.', '.core.conv.', '.core.kda.KdaChunked',
            '.core.kda.HeadParallelBackend')


def frames(sample):
    stack = sample.get('stackTrace') or {}
    return [f['method']['type']['name'].replace('/', '.') + '.' + f['method']['name'] for f in stack.get('frames', [])]


def section(stack):
    ours = [f for f in stack if f.startswith('io.kdapack')]
    for f in ours:
        if any(s in f for s in SECTIONS) and not re.search(r'lambda|Lambda|\.Parallel\.|\.Tensors\.', f):
            return f
    return ours[0]


def main():
    events = json.load(open(sys.argv[1]))['recording']['events']
    since = sys.argv[2] if len(sys.argv) > 2 else ''
    samples = []
    pool_classes = collections.defaultdict(set)
    for e in events:
        v = e['values']
        if e['type'] != 'jdk.CPUTimeSample' or v['startTime'] < since:
            continue
        stack = frames(v)
        if not any(f.startswith('io.kdapack') for f in stack) or any(f.startswith(SET_UP) for f in stack):
            continue
        thread = (v.get('eventThread') or {}).get('javaName') or '?'
        pool = re.match(r'(ForkJoinPool-\d+)-worker', thread)
        if pool:
            pool_classes[pool.group(1)].update(f.rsplit('.', 1)[0] for f in stack if f.startswith('io.kdapack'))
        samples.append((thread, stack))
    probe_pools = {p for p, classes in pool_classes.items()
                   if all(c.startswith('io.kdapack.core.linalg') for c in classes)}
    total = 0
    serial = collections.Counter()
    for thread, stack in samples:
        pool = re.match(r'(ForkJoinPool-\d+)-worker', thread)
        if pool and pool.group(1) in probe_pools or any('MatmulProbe' in f for f in stack):
            continue
        total += 1
        driver = next((i for i, f in enumerate(stack) if f.startswith(DRIVERS)), None)
        if driver is not None and not any(f.startswith(REGIONS) for f in stack[:driver]):
            serial[section(stack)] += 1
    count = sum(serial.values())
    print(f'step samples {total}, serial {count} ({count / max(total, 1):.3%}); left out: pools {sorted(probe_pools)}')
    for name, n in serial.most_common(20):
        print(f'{n:7d} {n / total:7.3%}  {name}')


if __name__ == '__main__':
    main()
