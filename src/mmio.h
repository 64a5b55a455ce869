/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Ordering between the CPU and the device, and stores to device pages.
 *
 * The queues live in ordinary memory that the device reads by DMA; the
 * doorbells are uncached (UAR) or write-combining (BlueFlame) MMIO.
 * x86 keeps stores in order and loads in order, so the DMA barriers are
 * compiler barriers there; write-combining buffers still need sfence.
 */
#ifndef MLX4_MMIO_H
#define MLX4_MMIO_H

#include <stdint.h>

#define mlx4_compiler_barrier()	asm volatile("" ::: "memory")

#if defined(__x86_64__) || defined(__i386__)

/* Queue memory writes are visible to the device before what follows. */
#define udma_to_device_barrier()	mlx4_compiler_barrier()
/* Queue memory reads that follow see what the device wrote before. */
#define udma_from_device_barrier()	mlx4_compiler_barrier()
/* Write-combined stores leave the CPU before what follows. */
#define mmio_flush_writes()	asm volatile("sfence" ::: "memory")

#else

#define udma_to_device_barrier()	__atomic_thread_fence(__ATOMIC_RELEASE)
#define udma_from_device_barrier()	__atomic_thread_fence(__ATOMIC_ACQUIRE)
#define mmio_flush_writes()		__atomic_thread_fence(__ATOMIC_SEQ_CST)

#endif

/* One 32-bit store of an already big-endian value. */
static inline void mmio_write32_be(void *addr, uint32_t be_value)
{
	*(volatile uint32_t *)addr = be_value;
}

/* One 64-bit store; @value is already in device byte order. */
static inline void mmio_write64_raw(void *addr, uint64_t value)
{
	*(volatile uint64_t *)addr = value;
}

#endif /* MLX4_MMIO_H */
