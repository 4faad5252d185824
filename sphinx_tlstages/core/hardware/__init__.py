"""What a variant costs the hardware: NVIDIA's compiler, occupancy, the driver check."""
