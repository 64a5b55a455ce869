/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One barrier of src/mmio.h per function, so that tests/unit/cross.tap can
 * compare each one's disassembly with the instruction the CPU needs.
 * Built for each CPU, never linked.
 */
#include "mmio.h"

#define PROBE(name, barrier) \
	__attribute__((noinline)) void probe_##name(void) { barrier; }

void probe_to_device(void);
void probe_from_device(void);
void probe_flush(void);
void probe_wc_start(void);

PROBE(to_device, udma_to_device_barrier())
PROBE(from_device, udma_from_device_barrier())
PROBE(flush, mmio_flush_writes())
PROBE(wc_start, mmio_wc_start())
