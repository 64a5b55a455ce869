EXTRA_DIST += debian/changelog debian/control debian/copyright debian/rules \
	debian/source/format debian/libmlx4-1.install \
	debian/libmlx4-dev.install debian/mlx4sim.install
