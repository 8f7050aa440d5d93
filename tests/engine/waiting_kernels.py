"""Kernels whose programs wait for each other: a split-K semaphore, a ticket lock, ordered commits,
a flag, and one that waits forever."""

import triton
import triton.language as tl


@triton.jit
def split_k_kernel(a_ptr, partial_ptr, out_ptr, count_ptr, K, SPLIT: tl.constexpr, BLOCK: tl.constexpr):
    # program 0 reduces the partial sums the others publish; it runs first, so it waits for them
    s = tl.program_id(0)
    offsets = s * BLOCK + tl.arange(0, BLOCK)
    part = tl.sum(tl.load(a_ptr + offsets, mask=offsets < K, other=0.0), axis=0)
    if s != 0:
        tl.store(partial_ptr + s, part)
        tl.atomic_add(count_ptr, 1, sem="release")
    else:
        while tl.atomic_add(count_ptr, 0, sem="acquire") < SPLIT - 1:
            pass
        total = part
        for i in range(1, SPLIT):
            total += tl.load(partial_ptr + i)
        tl.store(out_ptr, total)


@triton.jit
def ticket_lock_kernel(x_ptr, total_ptr, next_ptr, serving_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.sum(tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK)), axis=0)
    ticket = tl.atomic_add(next_ptr, 1)
    while tl.atomic_add(serving_ptr, 0) != ticket:
        pass
    tl.store(total_ptr, tl.load(total_ptr) + x)  # the critical section: a plain read-modify-write
    tl.atomic_add(serving_ptr, 1)


@triton.jit
def ordered_commit_kernel(log_ptr, position_ptr, serving_ptr):
    # programs commit in reverse order: each waits for every program after it
    pid = tl.program_id(0)
    n = tl.num_programs(0)
    while tl.atomic_cas(serving_ptr, n - 1 - pid, n - 1 - pid) != n - 1 - pid:
        pass
    at = tl.load(position_ptr)
    tl.store(log_ptr + at, pid)
    tl.store(position_ptr, at + 1)
    tl.atomic_add(serving_ptr, 1)


@triton.jit
def flag_kernel(flag_ptr, data_ptr, out_ptr):
    # program 0 reads what the last program writes, once its flag is up
    pid = tl.program_id(0)
    last = tl.num_programs(0) - 1
    if pid == last:
        tl.store(data_ptr, 42.0)
        tl.atomic_xchg(flag_ptr, 1)
    elif pid == 0:
        while tl.load(flag_ptr, volatile=True) == 0:
            pass
        tl.store(out_ptr, tl.load(data_ptr))


@triton.jit
def wait_forever_kernel(flag_ptr, out_ptr):
    pid = tl.program_id(0)
    while tl.load(flag_ptr, volatile=True) == 0:
        pass
    tl.store(out_ptr + pid, 1)


@triton.jit
def counting_while_kernel(bound_ptr, out_ptr):
    # reads the same memory each iteration, but counts: not a wait
    j = 0
    while j < tl.load(bound_ptr):
        j += 1
    tl.store(out_ptr, j)


@triton.jit
def reloading_wait_kernel(flag_ptr, out_ptr):
    # the waiting loop rebinds its variable to a fresh load each time, of the same value
    pid = tl.program_id(0)
    if pid == 0:
        flag = tl.load(flag_ptr, volatile=True)
        while flag == 0:
            flag = tl.load(flag_ptr, volatile=True)
        tl.store(out_ptr, flag)
    else:
        tl.atomic_xchg(flag_ptr, 5)
