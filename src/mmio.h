/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Ordering between the CPU and the device, and stores to device pages.
 *
 * The queues live in ordinary memory that the device reads by DMA; the
 * doorbells are uncached (UAR) or write-combining (BlueFlame) MMIO.  The
 * device is not another CPU: a barrier that only orders memory between
 * CPUs (C11 fences: lwsync, dmb ish, fence rw,rw) lets a doorbell reach
 * PCIe before the WQE it announces.  Each CPU therefore gets the
 * instruction that orders normal memory against I/O:
 *
 *   CPU          to device    from device   flush write-combining
 *   x86          (compiler)   (compiler)    sfence; i386: locked add
 *   aarch64      dmb oshst    dmb oshld     dsb st
 *   arm v7       dmb oshst    dmb osh       dsb st
 *   arm v5, v6   the kernel's helper (__sync_synchronize)
 *   ppc64        sync         lwsync        sync
 *   riscv        fence ow,ow  fence ir,ir   fence ow,ow
 *   mips         sync         sync          sync
 *   s390x        (compiler)   (compiler)    pciwb when MIO
 *
 * x86 keeps stores in order with each other and with uncached stores,
 * and loads in order.  s390x orders everything, but reaches PCI memory
 * only through its PCI store instructions (z15 and later, when the
 * kernel grants them: HWCAP_S390_PCI_MIO) or the s390_pci_mmio_write
 * system call.
 *
 * tests/unit/cross checks the disassembly of each CPU's build: the stores
 * marked "cross.sh: ... store" below, wherever they are inlined, must
 * have the barriers these rules ask for around them.
 */
#ifndef MLX4_MMIO_H
#define MLX4_MMIO_H

#include <stdint.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define mlx4_compiler_barrier()	asm volatile("" ::: "memory")

/*
 * udma_to_device_barrier(): queue memory written before it is visible to
 * the device before any store that follows, MMIO included.
 * udma_from_device_barrier(): reads that follow the sight of a device
 * write (a CQE owner bit) see what the device wrote before it.
 * mmio_flush_writes(): write-combined stores leave the CPU, whole, before
 * anything that follows.
 * mmio_wc_start(): placed right after taking the lock that owns a
 * write-combining register, before the first store to it: what this CPU
 * and the lock's previous holder stored goes first.  On x86 the lock's
 * locked exchange already does that.
 */
#if defined(__x86_64__)

#define udma_to_device_barrier()	mlx4_compiler_barrier()
#define udma_from_device_barrier()	mlx4_compiler_barrier()
#define mmio_flush_writes()	asm volatile("sfence" ::: "memory")
#define mmio_wc_start()		mlx4_compiler_barrier()

#elif defined(__i386__)

/* Debian's i386 baseline (i686) has no SSE, hence no sfence. */
#define udma_to_device_barrier()	mlx4_compiler_barrier()
#define udma_from_device_barrier()	mlx4_compiler_barrier()
#define mmio_flush_writes()	asm volatile("lock; addl $0,0(%%esp)" ::: "memory")
#define mmio_wc_start()		mlx4_compiler_barrier()

#elif defined(__aarch64__)

/* The device is an outer-shareable observer: "ish" does not reach it. */
#define udma_to_device_barrier()	asm volatile("dmb oshst" ::: "memory")
#define udma_from_device_barrier()	asm volatile("dmb oshld" ::: "memory")
#define mmio_flush_writes()	asm volatile("dsb st" ::: "memory")
#define mmio_wc_start()		mmio_flush_writes()

#elif defined(__arm__) && defined(__ARM_ARCH) && __ARM_ARCH >= 7

#define udma_to_device_barrier()	asm volatile("dmb oshst" ::: "memory")
#define udma_from_device_barrier()	asm volatile("dmb osh" ::: "memory")
#define mmio_flush_writes()	asm volatile("dsb st" ::: "memory")
#define mmio_wc_start()		mmio_flush_writes()

#elif defined(__arm__)

/*
 * ARMv5 and v6 (armel) have no barrier instructions a user program may
 * use on every core; the kernel's barrier helper is the one that is
 * right on the core this runs on.
 */
#define udma_to_device_barrier()	__sync_synchronize()
#define udma_from_device_barrier()	__sync_synchronize()
#define mmio_flush_writes()	__sync_synchronize()
#define mmio_wc_start()		mmio_flush_writes()

#elif defined(__PPC64__) || defined(__powerpc64__)

/* lwsync does not order cacheable stores before a cache-inhibited one. */
#define udma_to_device_barrier()	asm volatile("sync" ::: "memory")
#define udma_from_device_barrier()	asm volatile("lwsync" ::: "memory")
#define mmio_flush_writes()	asm volatile("sync" ::: "memory")
#define mmio_wc_start()		mmio_flush_writes()

#elif defined(__riscv)

/* The "o" (device output) and "i" bits are what order I/O at all. */
#define udma_to_device_barrier()	asm volatile("fence ow,ow" ::: "memory")
#define udma_from_device_barrier()	asm volatile("fence ir,ir" ::: "memory")
#define mmio_flush_writes()	asm volatile("fence ow,ow" ::: "memory")
#define mmio_wc_start()		mmio_flush_writes()

#elif defined(__mips__) || defined(__PPC__) || defined(__powerpc__)

#define udma_to_device_barrier()	asm volatile("sync" ::: "memory")
#define udma_from_device_barrier()	asm volatile("sync" ::: "memory")
#define mmio_flush_writes()	asm volatile("sync" ::: "memory")
#define mmio_wc_start()		mmio_flush_writes()

#elif defined(__s390x__)

#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Set once at load from AT_HWCAP (HWCAP_S390_PCI_MIO): see mlx4.c. */
extern int mlx4_s390_mio;

#define udma_to_device_barrier()	mlx4_compiler_barrier()
#define udma_from_device_barrier()	mlx4_compiler_barrier()
#define mmio_flush_writes()	s390_pci_write_barrier()
#define mmio_wc_start()		mmio_flush_writes()

/* PCI WRITE BARRIER: earlier PCI stores complete before later ones. */
static inline void s390_pci_write_barrier(void)
{
	if (mlx4_s390_mio)
		asm volatile(".insn rre,0xb9d50000,0,0" ::: "memory");
	else
		mlx4_compiler_barrier();
}

/* PCI STORE: @len (1, 2, 4 or 8) low-order bytes of @value at @addr. */
static inline void s390_pci_store(void *addr, uint64_t value, size_t len)
{
	union {
		unsigned __int128 pair;
		struct {
			uint64_t addr;
			uint64_t len;
		};
	} target = { .addr = (uintptr_t)addr, .len = len };

	asm volatile(".insn rre,0xb9d40000,%[value],%[target]"
		     : [target] "+&d" (target.pair)
		     : [value] "d" (value)
		     : "cc", "memory");
}

/* PCI STORE BLOCK: @len bytes, at most 128, within one 4 KiB page. */
static inline void s390_pci_store_block(void *addr, const void *src,
					size_t len)
{
	asm volatile(".insn rsy,0xeb00000000d4,%[len],%[addr],%[src]"
		     : [len] "+d" (len)
		     : [addr] "d" (addr), [src] "Q" (*(const char *)src)
		     : "cc", "memory");
}

/* Without MIO, the kernel stores for us. */
static inline void s390_pci_write_syscall(void *addr, const void *src,
					  size_t len)
{
	syscall(__NR_s390_pci_mmio_write, addr, src, len);
}

#else
#error "libmlx4: no CPU-to-device barriers for this architecture in src/mmio.h"
#endif

#ifdef MLX4_UNIT_BARRIER_HOOK
/*
 * The unit tests only (tests/unit/local.mk): a test may look at the
 * queues at each barrier, where the device could first see what came
 * before it.  The function is defined while the CPU's barrier is still
 * the macro above, which then becomes the call.
 */
extern void (*mlx4_unit_barrier_hook)(void);

static inline void mlx4_unit_to_device_barrier(void)
{
	udma_to_device_barrier();
	if (mlx4_unit_barrier_hook)
		mlx4_unit_barrier_hook();
}
#undef udma_to_device_barrier
#define udma_to_device_barrier()	mlx4_unit_to_device_barrier()
#endif

/*
 * Can one store write 64 bits to a device page?  Where not, a 64-bit
 * doorbell is two 32-bit stores, in ascending address order, and the
 * caller keeps other threads' halves out from between them.
 */
#if defined(__x86_64__) || defined(__LP64__)
#define MLX4_MMIO_STORE64	1
#else
#define MLX4_MMIO_STORE64	0
#endif

/* One 32-bit store of an already big-endian value. */
static inline void mmio_write32_be(void *addr, uint32_t be_value)
{
#if defined(__s390x__)
	if (mlx4_s390_mio)
		s390_pci_store(addr, be_value, sizeof(be_value));
	else
		s390_pci_write_syscall(addr, &be_value, sizeof(be_value));
#else
	*(volatile uint32_t *)addr = be_value; /* cross.sh: MMIO store */
#endif
}

/*
 * 64 bits already in device byte order, as one store; on a CPU without
 * MLX4_MMIO_STORE64, as two that the caller serializes.
 */
static inline void mmio_write64_raw(void *addr, uint64_t value)
{
#if defined(__s390x__)
	if (mlx4_s390_mio)
		s390_pci_store(addr, value, sizeof(value));
	else
		s390_pci_write_syscall(addr, &value, sizeof(value));
#elif MLX4_MMIO_STORE64
	*(volatile uint64_t *)addr = value; /* cross.sh: MMIO store64 */
#else
	uint32_t half[2];

	__builtin_memcpy(half, &value, sizeof(half));
	((volatile uint32_t *)addr)[0] = half[0]; /* cross.sh: MMIO half store */
	((volatile uint32_t *)addr)[1] = half[1]; /* cross.sh: MMIO half store */
#endif
}

/*
 * One 64-byte block from ordinary memory to a write-combining page such
 * as a BlueFlame register: plain stores of a fixed width, never string
 * moves, which the write-combining buffer may take in any order.  x86_64
 * always has SSE2, whose 16-byte stores need half as many as 64-bit ones;
 * elsewhere the CPU's word does it.  @src need not be aligned; @dst is.
 */
#if !defined(__s390x__)
/* Eight words: 64 bytes on a 64-bit CPU, 32 on a 32-bit one. */
static inline void mmio_wc_copy_words8(volatile unsigned long *to,
				       const unsigned long *from)
{
	to[0] = from[0]; /* cross.sh: WC store */
	to[1] = from[1]; /* cross.sh: WC store */
	to[2] = from[2]; /* cross.sh: WC store */
	to[3] = from[3]; /* cross.sh: WC store */
	to[4] = from[4]; /* cross.sh: WC store */
	to[5] = from[5]; /* cross.sh: WC store */
	to[6] = from[6]; /* cross.sh: WC store */
	to[7] = from[7]; /* cross.sh: WC store */
}

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
	mmio_wc_copy_words8(dst, src);
	if (sizeof(unsigned long) == 4)
		mmio_wc_copy_words8((volatile unsigned long *)dst + 8,
				    (const unsigned long *)src + 8);
#endif
}
#endif

/*
 * @bytes, a multiple of 64 and not 0, block by block.  The caller
 * flushes them (mmio_flush_writes()) before whatever must follow.
 */
static inline void mmio_wc_copy64(void *dst, const void *src,
				  unsigned int bytes)
{
#if defined(__s390x__)
	/* A BlueFlame buffer never crosses a page: 128 bytes a block. */
	if (!mlx4_s390_mio) {
		s390_pci_write_syscall(dst, src, bytes);
		return;
	}
	for (;;) {
		unsigned int len = bytes < 128 ? bytes : 128;

		s390_pci_store_block(dst, src, len);
		bytes -= len;
		if (!bytes)
			break;
		dst = (char *)dst + len;
		src = (const char *)src + len;
	}
#else
	const char *end = (const char *)src + bytes;

	for (;;) {
		mmio_wc_copy_block(dst, src);
		src = (const char *)src + 64;
		if (src == end)
			break;
		dst = (char *)dst + 64;
	}
#endif
}

#endif /* MLX4_MMIO_H */
