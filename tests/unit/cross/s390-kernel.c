/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The kernel's half of an s390x doorbell, for the device-less unit tests
 * under qemu-s390x: without the PCI store instructions (qemu grants no
 * HWCAP_S390_PCI_MIO) the provider asks s390_pci_mmio_write to store
 * for it, which qemu does not implement.  The fake UAR and BlueFlame
 * pages are plain memory, so storing is a copy.  Linked into the s390x
 * unit tests only; it takes the place of libc's syscall().
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

long syscall(long number, ...)
{
	va_list ap;
	void *to;
	const void *from;
	size_t len;

	if (number != __NR_s390_pci_mmio_write) {
		fprintf(stderr, "s390-kernel: unexpected system call %ld\n",
			number);
		abort();
	}
	va_start(ap, number);
	to = va_arg(ap, void *);
	from = va_arg(ap, const void *);
	len = va_arg(ap, size_t);
	va_end(ap);
	memcpy(to, from, len);
	return 0;
}
