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

struct mlx4_lock {
	int locked;
};

static inline void mlx4_lock_init(struct mlx4_lock *lock)
{
	lock->locked = 0;
}

static inline void mlx4_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	asm volatile("pause" ::: "memory");
#else
	asm volatile("" ::: "memory");
#endif
}

/* Wait for the lock and take it. */
void mlx4_lock_contended(struct mlx4_lock *lock);

static inline void mlx4_lock(struct mlx4_lock *lock)
{
	if (__builtin_expect(__atomic_exchange_n(&lock->locked, 1,
						 __ATOMIC_ACQUIRE), 0))
		mlx4_lock_contended(lock);
}

/* Nonzero if taken; the caller decides what waiting costs. */
static inline int mlx4_trylock(struct mlx4_lock *lock)
{
	return !__atomic_exchange_n(&lock->locked, 1, __ATOMIC_ACQUIRE);
}

static inline void mlx4_unlock(struct mlx4_lock *lock)
{
	__atomic_store_n(&lock->locked, 0, __ATOMIC_RELEASE);
}

#endif /* MLX4_LOCK_H */
