dist_man_MANS = man/mlx4sim.1 man/mlx4dv.7
