// How the runtime's processes ask the kernel to schedule their threads.
#pragma once

namespace dtwin::rt {

/// Puts every thread of this process under SCHED_BATCH (sched(7); priority 0, nice unchanged,
/// no privilege needed); threads and processes created afterwards inherit it. A batch thread
/// that wakes does not preempt the thread running on its core: it runs on an idle core, or when
/// that thread blocks or the scheduler's tick ends its slice.
///
/// Why: Gloo's TCP device loop watches each pair's socket with level-triggered epoll, and when
/// another thread holds the pair's lock it returns without reading, "until the next tick"
/// (gloo/transport/tcp/pair.cc, Pair::handleEvents's try_to_lock), so epoll_wait reports the same
/// event again at once. When the loop, woken by data, preempts the c10d worker that holds that
/// lock on the same core, it spins until the scheduler's tick (4 ms at CONFIG_HZ=250, and no
/// earlier under PREEMPT_NONE) gives the core back to the worker. bench/allreduce_stalls.py on the
/// 2-core VM (two processes, 295 KB all-reduces between 5 ms of compute, two runs): 47-49% of the
/// all-reduces took over 2 ms, 79-86% of those ending within 0.5 ms after a tick, mean 2.35-2.42
/// ms against a median of 1.05-1.54 ms; under SCHED_BATCH 7-9%, mean 0.73-0.82 ms, median
/// 0.50-0.52.
///
/// Returns false, with errno set, when the kernel refused a thread (the others keep the policy).
bool schedule_threads_as_batch();

}  // namespace dtwin::rt
