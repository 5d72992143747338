"""CFD (Euler 3-D): each cell's time-step factor from its density, momentum and energy.

Ported from Rodinia 3.1 (University of Virginia, BSD-style), cuda/cfd/euler3d.cu
(`cuda_compute_step_factor` and its device functions; `float3` is an f32x4 with w unused), as
first written in issue 29's second probe."""
import oxide as ox
from oxide import Slice, MutSlice, f32, i32, thread, block

GAMMA = 1.4
VAR_DENSITY = 0
VAR_MOMENTUM = 1
VAR_DENSITY_ENERGY = 4


def compute_velocity(density: f32, momentum: ox.f32x4) -> ox.f32x4:
    return ox.f32x4(momentum.x / density, momentum.y / density, momentum.z / density, 0.0)


def compute_speed_sqd(velocity: ox.f32x4) -> f32:
    return velocity.x * velocity.x + velocity.y * velocity.y + velocity.z * velocity.z


def compute_pressure(density: f32, density_energy: f32, speed_sqd: f32) -> f32:
    return (f32(GAMMA) - f32(1.0)) * (density_energy - f32(0.5) * density * speed_sqd)


def compute_speed_of_sound(density: f32, pressure: f32) -> f32:
    return ox.math.sqrt(f32(GAMMA) * pressure / density)


@ox.kernel
def cuda_compute_step_factor(nelr: i32, variables: Slice[f32], areas: Slice[f32], step_factors: MutSlice[f32]) -> None:
    i = block.dim.x * block.idx.x + thread.idx.x
    density = variables[i + VAR_DENSITY * nelr]
    momentum = ox.f32x4(variables[i + (VAR_MOMENTUM + 0) * nelr], variables[i + (VAR_MOMENTUM + 1) * nelr],
                        variables[i + (VAR_MOMENTUM + 2) * nelr], 0.0)
    density_energy = variables[i + VAR_DENSITY_ENERGY * nelr]
    velocity = compute_velocity(density, momentum)
    speed_sqd = compute_speed_sqd(velocity)
    pressure = compute_pressure(density, density_energy, speed_sqd)
    speed_of_sound = compute_speed_of_sound(density, pressure)
    with ox.unsafe():
        step_factors[i] = f32(0.5) / (ox.math.sqrt(areas[i]) * (ox.math.sqrt(speed_sqd) + speed_of_sound))
