"""Training of the Embodied Perceptron: config, samples, the loop (DDP-capable) and evaluation."""
