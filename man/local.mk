dist_man_MANS = man/mlx4sim.1 man/mlx4dv.7 \
	man/mlx4dv_init_obj.3 man/mlx4dv_query_device.3 \
	man/mlx4dv_create_qp.3 man/mlx4dv_set_context_attr.3
