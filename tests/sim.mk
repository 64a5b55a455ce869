# Tests of the simulator (filled in below as they come).
