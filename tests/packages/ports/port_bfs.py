"""Breadth-first search, one frontier level per pair of launches.

Ported from Rodinia 3.1, cuda/bfs/kernel.cu and kernel2.cu (`Kernel`, `Kernel2`), the way its
author writes it: the thread id from blockIdx.x * MAX_THREADS_PER_BLOCK + threadIdx.x, bool
masks for the frontier, the next frontier and the visited nodes, the cost of a neighbour
written by whichever thread reaches it first in the level (the same value), a `*g_over = true`
flag the host polls. The original's `Node {starting, no_of_edges}` array is two int arrays
here (views of structs are not supported yet, docs/language.md "Structs")."""
import oxide as ox
from oxide import MutSlice, Slice, block, boolean, i32, thread

MAX_THREADS_PER_BLOCK = 512


@ox.kernel
def bfs_kernel(g_starting: Slice[i32], g_no_of_edges: Slice[i32], g_graph_edges: Slice[i32],
               g_graph_mask: MutSlice[boolean], g_updating_graph_mask: MutSlice[boolean],
               g_graph_visited: Slice[boolean], g_cost: MutSlice[i32], no_of_nodes: i32) -> None:
    tid = block.idx.x * MAX_THREADS_PER_BLOCK + thread.idx.x
    if tid < no_of_nodes and g_graph_mask[tid]:
        with ox.unsafe():
            g_graph_mask[tid] = False
            for i in range(g_starting[tid], g_no_of_edges[tid] + g_starting[tid]):
                id = g_graph_edges[i]
                if not g_graph_visited[id]:
                    g_cost[id] = g_cost[tid] + 1
                    g_updating_graph_mask[id] = True


@ox.kernel
def bfs_kernel2(g_graph_mask: MutSlice[boolean], g_updating_graph_mask: MutSlice[boolean],
                g_graph_visited: MutSlice[boolean], g_over: MutSlice[boolean], no_of_nodes: i32) -> None:
    tid = block.idx.x * MAX_THREADS_PER_BLOCK + thread.idx.x
    if tid < no_of_nodes and g_updating_graph_mask[tid]:
        with ox.unsafe():
            g_graph_mask[tid] = True
            g_graph_visited[tid] = True
            g_over[0] = True
            g_updating_graph_mask[tid] = False
