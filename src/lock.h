/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The lock that guards each queue and CQ.
 *
 * Critical sections on the data path are a few dozen instructions, so a
 * test-and-set lock taken inline costs far less than a call into
 * pthread_spin_lock() and is just as correct: acquire on the exchange,
 * release on the store.  Waiters spin on a plain load (no cache line
 * ping-pong) with a pause hint.
 */
#ifndef MLX4_LOCK_H
#define MLX4_LOCK_H

#include <stdint.h>

/*
 * A queue that one thread at a time uses by the application's promise (a
 * thread domain's, a CQ created single-threaded) has a lock that is
 * never taken: its mode is chosen once, at creation.  Taking it then
 * costs the test of a byte in the lock word's cache line instead of the
 * atomic exchange; every other lock pays that test, one compare and an
 * untaken branch (see bench/README).
 * Releasing stays a plain store of 0, to a word no one else writes.
 */
struct mlx4_lock {
	int locked;
	uint8_t single_threaded;
};

static inline void mlx4_lock_init(struct mlx4_lock *lock, int single_threaded)
{
	lock->locked = 0;
	lock->single_threaded = single_threaded;
}

static inline void mlx4_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	asm volatile("pause" ::: "memory");
#else
	asm volatile("" ::: "memory");
#endif
}

/*
 * Set the lock word; nonzero if it was set already.  An atomic OR of the
 * bit whose old value only a branch looks at is one instruction on x86
 * (lock bts), where an exchange needs the 1 in a register and a test of
 * the old value (see bench/README).
 */
static inline int mlx4_lock_taken(struct mlx4_lock *lock)
{
	return __atomic_fetch_or(&lock->locked, 1, __ATOMIC_ACQUIRE) & 1;
}

/* Wait for the lock and take it. */
void mlx4_lock_contended(struct mlx4_lock *lock);

static inline void mlx4_lock(struct mlx4_lock *lock)
{
	if (__builtin_expect(lock->single_threaded, 0))
		return;
	if (__builtin_expect(mlx4_lock_taken(lock), 0))
		mlx4_lock_contended(lock);
}

/* Nonzero if taken; the caller decides what waiting costs. */
static inline int mlx4_trylock(struct mlx4_lock *lock)
{
	return __builtin_expect(lock->single_threaded, 0) ||
	       !mlx4_lock_taken(lock);
}

/*
 * The context's own locks (its BlueFlame buffers, the UAR of a 32-bit
 * CPU's two-half doorbells) serve every queue and are always taken:
 * on x86 their locked exchange is also the barrier before the
 * write-combining stores (mmio.h), which no mode test may skip.
 */
static inline void mlx4_lock_shared(struct mlx4_lock *lock)
{
	if (__builtin_expect(__atomic_exchange_n(&lock->locked, 1,
						 __ATOMIC_ACQUIRE), 0))
		mlx4_lock_contended(lock);
}

static inline int mlx4_trylock_shared(struct mlx4_lock *lock)
{
	return !__atomic_exchange_n(&lock->locked, 1, __ATOMIC_ACQUIRE);
}

static inline void mlx4_unlock(struct mlx4_lock *lock)
{
	__atomic_store_n(&lock->locked, 0, __ATOMIC_RELEASE);
}

#endif /* MLX4_LOCK_H */
