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

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

/*
 * One 64-byte block from ordinary memory to a write-combining page such
 * as a BlueFlame register: plain stores of a fixed width, never string
 * moves, which the write-combining buffer may take in any order.  x86_64
 * always has SSE2, whose 16-byte stores need half as many as 64-bit ones;
 * elsewhere 64-bit stores do it.  @src need not be aligned; @dst is.
 */
static inline void mmio_wc_copy_block(void *dst, const void *src)
{
#if defined(__SSE2__)
	volatile __m128i *to = dst;
	const __m128i *from = src;
	__m128i a = _mm_loadu_si128(from);
	__m128i b = _mm_loadu_si128(from + 1);
	__m128i c = _mm_loadu_si128(from + 2);
	__m128i d = _mm_loadu_si128(from + 3);

	to[0] = a;
	to[1] = b;
	to[2] = c;
	to[3] = d;
#else
	volatile uint64_t *to = dst;
	const uint64_t *from = src;

	to[0] = from[0];
	to[1] = from[1];
	to[2] = from[2];
	to[3] = from[3];
	to[4] = from[4];
	to[5] = from[5];
	to[6] = from[6];
	to[7] = from[7];
#endif
}

/*
 * @bytes, a multiple of 64 and not 0, block by block.  The caller
 * flushes them (mmio_flush_writes()) before whatever must follow.
 */
static inline void mmio_wc_copy64(void *dst, const void *src,
				  unsigned int bytes)
{
	for (;;) {
		mmio_wc_copy_block(dst, src);
		bytes -= 64;
		if (!bytes)
			break;
		dst = (char *)dst + 64;
		src = (const char *)src + 64;
	}
}

#endif /* MLX4_MMIO_H */
