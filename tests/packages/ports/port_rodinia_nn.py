"""Nearest neighbour: the distance of every record to a query point.

Ported from Rodinia 3.1, cuda/nn/nn_cuda.cu (`euclid`), the way its author writes it: the global
id from a 2-D grid of 1-D blocks, the records' lat/lng fields (a flat array of the two here: oxide
has no views of structs yet), `(float)sqrt(...)`."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, grid, i32, thread


@ox.kernel
def euclid(d_locations: Slice[f32], d_distances: MutSlice[f32], numRecords: i32, lat: f32, lng: f32) -> None:
    globalId = block.dim.x * (grid.dim.x * block.idx.y + block.idx.x) + thread.idx.x
    if globalId < numRecords:
        rlat = d_locations[2 * globalId]
        rlng = d_locations[2 * globalId + 1]
        with ox.unsafe():
            d_distances[globalId] = ox.math.sqrt((lat - rlat) * (lat - rlat) + (lng - rlng) * (lng - rlng))
