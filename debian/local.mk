EXTRA_DIST += debian/changelog debian/control debian/copyright debian/rules \
	debian/source/format debian/clean debian/libmlx4-1.install \
	debian/libmlx4-dev.install debian/mlx4sim.install \
	debian/libmlx4-1.symbols debian/libmlx4-1.triggers.in \
	debian/diversions.sh debian/preinst.in debian/postinst.in \
	debian/postrm.in
