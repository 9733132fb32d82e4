"""A Kinect-like depth and colour noise model, applied to a noise-free rendered view.

Depth (all parameters in DepthNoiseConfig):
* axial Gaussian noise growing with depth, sigma(z) = a + b (z - 0.4)^2 (Nguyen, Izadi and
  Lovell, 2012, measured on a Kinect; the Azure Kinect is a little better, so the defaults are
  somewhat optimistic for the v1 and pessimistic for the Azure);
* quantisation to whole millimetres (the uint16 mm images every source reads);
* holes where the surface is seen at a grazing angle, at depth edges (mixed pixels are
  invalidated by the sensor), on surfaces that return no light (screens, glass), outside the
  working range, and random dropout.
Colour: Gaussian sensor noise per channel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .renderer import RenderedView


@dataclass(frozen=True)
class DepthNoiseConfig:
    """Parameters of the depth and colour noise."""

    sigma_base: float = 0.0012  # axial noise at 0.4 m, metres
    sigma_quadratic: float = 0.0019  # growth of the axial noise, metres per (metre - 0.4)^2
    quantum: float = 0.001  # depth quantisation step, metres (uint16 millimetres)
    min_depth: float = 0.25  # closer pixels read 0, metres
    max_depth: float = 6.0  # farther pixels read 0, metres
    grazing_cos: float = 0.2  # |cos(incidence)| below this (about 78 degrees) ...
    grazing_dropout: float = 0.8  # ... loses the pixel with this probability
    edge_jump: float = 0.04  # relative depth jump to a neighbour that marks an edge pixel
    edge_dropout: float = 0.5  # probability that an edge pixel is lost
    no_return_dropout: float = 0.9  # probability that a screen / glass pixel is lost
    random_dropout: float = 0.01  # probability that any pixel is lost
    color_sigma: float = 2.0  # colour noise, 8-bit levels


def apply_depth_noise(view: RenderedView, rng: np.random.Generator,
                      config: DepthNoiseConfig = DepthNoiseConfig()) -> np.ndarray:
    """(H, W) float32 noisy depth in metres (0 = no reading) from a noise-free view."""
    z = view.depth
    valid = z > 0
    sigma = np.float32(config.sigma_base) + np.float32(config.sigma_quadratic) * (z - np.float32(0.4)) ** 2
    noisy = z + rng.standard_normal(z.shape, dtype=np.float32) * sigma
    noisy = np.round(noisy / np.float32(config.quantum)) * np.float32(config.quantum)
    u = rng.random(z.shape, dtype=np.float32)
    drop = ~valid | (noisy < config.min_depth) | (noisy > config.max_depth)
    drop |= (view.cos_incidence < config.grazing_cos) & (u < config.grazing_dropout)
    drop |= view.no_return & (u < config.no_return_dropout)
    drop |= u > 1.0 - config.random_dropout
    # Edge pixels: any 4-neighbour more than edge_jump (relative) nearer or farther.
    jump = np.zeros(z.shape, bool)
    dz_h = np.abs(np.diff(z, axis=1)) > config.edge_jump * np.maximum(z[:, 1:], z[:, :-1])
    dz_v = np.abs(np.diff(z, axis=0)) > config.edge_jump * np.maximum(z[1:], z[:-1])
    jump[:, 1:] |= dz_h
    jump[:, :-1] |= dz_h
    jump[1:] |= dz_v
    jump[:-1] |= dz_v
    drop |= jump & (rng.random(z.shape, dtype=np.float32) < config.edge_dropout)
    return np.where(drop, 0.0, noisy).astype(np.float32)


def apply_color_noise(color: np.ndarray, rng: np.random.Generator,
                      config: DepthNoiseConfig = DepthNoiseConfig()) -> np.ndarray:
    """(H, W, 3) uint8 colour with Gaussian sensor noise."""
    if config.color_sigma <= 0:
        return color.copy()
    # One grey-level noise value per pixel plus a weaker per-channel one: half the normals of
    # independent channel noise, and a real sensor's noise is mostly shared by the channels.
    h, w, _ = color.shape
    grey = rng.standard_normal((h, w, 1), dtype=np.float32) * np.float32(config.color_sigma)
    chan = rng.random(color.shape, dtype=np.float32) - np.float32(0.5)
    noisy = color.astype(np.float32) + grey + chan * np.float32(config.color_sigma)
    return np.clip(noisy, 0, 255).astype(np.uint8)
