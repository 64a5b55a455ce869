#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# ibv_devices and ibv_devinfo -v see a ConnectX-3 Pro (the simulator's
# default model) with ACTIVE IB ports; --model cx3 a ConnectX-3.
# Usage: devinfo.sh project|system
. "$(dirname "$0")/../lib.sh"
need_program ibv_devinfo ibverbs-utils
provider=$1

sim_start --provider="$provider"
ibv_devices >"$work/devices" 2>&1
check "ibv_devices lists mlx4_0 with its node GUID" \
	grep -q "mlx4_0.*0002c90300a1b200" "$work/devices"
ibv_devinfo -v >"$work/devinfo" 2>&1
check "ibv_devinfo -v succeeds" test $? -eq 0
for field in "vendor_id:.*0x02c9" "vendor_part_id:.*4103" \
	     "fw_ver:.*2\.42\.5000" "board_id:.*MT_1090120019" \
	     "phys_port_cnt:.*2" "max_qp_wr:.*16351" "max_sge:.*32" \
	     "max_cqe:.*4194303" "max_srq_wr:.*16383" "max_srq_sge:.*31" \
	     "atomic_cap:.*ATOMIC_HCA" "max_qp_rd_atom:.*16" \
	     "local_ca_ack_delay:.*15"; do
	check "ibv_devinfo -v shows $field" grep -q "$field" "$work/devinfo"
done
check "both ports ACTIVE" test "$(grep -c 'state:.*PORT_ACTIVE (4)' "$work/devinfo")" -eq 2
check "both ports LinkUp, 4X FDR, InfiniBand, MTU 4096" sh -c "
	test \$(grep -c 'phys_state:.*LINK_UP' '$work/devinfo') -eq 2 &&
	test \$(grep -c 'active_width:.*4X' '$work/devinfo') -eq 2 &&
	test \$(grep -c 'active_speed:.*14.0 Gbps' '$work/devinfo') -eq 2 &&
	test \$(grep -c 'link_layer:.*InfiniBand' '$work/devinfo') -eq 2 &&
	test \$(grep -c 'active_mtu:.*4096' '$work/devinfo') -eq 2"
lids=$(sed -n 's/.*port_lid:[[:space:]]*\([0-9]*\)/\1/p' "$work/devinfo" | sort -u | tr '\n' ' ')
check "the SM gave each port its own LID ($lids)" \
	test "$(echo $lids | wc -w)" -eq 2 -a "$(echo $lids | cut -d' ' -f1)" -gt 0
check "sm_lid is the switch's" grep -q "sm_lid:.*1$" "$work/devinfo"
check "GID 0 is the subnet prefix and port GUID" \
	grep -q "GID\[  0\]:.*fe80:0000:0000:0000:0002:c903:00a1:b201" "$work/devinfo"
check "sysfs: PCI device 0x1007, hca_type MT4103 (ConnectX-3 Pro)" sh -c "
	test \"\$(cat $SYSFS_PATH/class/infiniband/mlx4_0/device/device)\" = 0x1007 &&
	test \"\$(cat $SYSFS_PATH/class/infiniband/mlx4_0/hca_type)\" = MT4103"

# Another simulator at once, with two one-port ConnectX-3 adapters.
"$MLX4SIM" start --provider="$provider" --hcas 2 --ports 1 --model=cx3 >"$work/env2" 2>&1
(. "$work/env2" && ibv_devinfo -v) >"$work/devinfo2" 2>&1
check "a second simulator runs beside the first, with --hcas 2 --ports 1" \
	sh -c "grep -q 'hca_id:.*mlx4_0' '$work/devinfo2' &&
	       grep -q 'hca_id:.*mlx4_1' '$work/devinfo2' &&
	       test \$(grep -c 'phys_port_cnt:.*1' '$work/devinfo2') -eq 2"
check "--model cx3: vendor_part_id 4099, PCI device 0x1003 (ConnectX-3)" \
	sh -c "test \$(grep -c 'vendor_part_id:.*4099' '$work/devinfo2') -eq 2 &&
	       (. '$work/env2' && test \"\$(cat \$SYSFS_PATH/class/infiniband/mlx4_1/device/device)\" = 0x1003)"
(. "$work/env2" && "$MLX4SIM" stop) >/dev/null 2>&1
ibv_devices >"$work/devices" 2>&1
check "the first simulator still answers after the second stopped" \
	grep -q "mlx4_0" "$work/devices"
check "no strict-mode breach" sim_stop
finish
