// Rodinia 3.1, cuda/bfs/kernel.cu and kernel2.cu (Pawan Harish, IIIT Hyderabad): Kernel, Kernel2.
// As upstream, except that the Node {starting, no_of_edges} array is two int arrays, as the port
// has it (oxide has no views of structs yet). Upstream graph: graph1MW_6.txt (1M nodes, 6 edges).
#define MAX_THREADS_PER_BLOCK 512

__global__ void
Kernel( int* g_starting, int* g_no_of_edges, int* g_graph_edges, bool* g_graph_mask, bool* g_updating_graph_mask, bool *g_graph_visited, int* g_cost, int no_of_nodes)
{
	int tid = blockIdx.x*MAX_THREADS_PER_BLOCK + threadIdx.x;
	if( tid<no_of_nodes && g_graph_mask[tid])
	{
		g_graph_mask[tid]=false;
		for(int i=g_starting[tid]; i<(g_no_of_edges[tid] + g_starting[tid]); i++)
			{
			int id = g_graph_edges[i];
			if(!g_graph_visited[id])
				{
				g_cost[id]=g_cost[tid]+1;
				g_updating_graph_mask[id]=true;
				}
			}
	}
}

__global__ void
Kernel2( bool* g_graph_mask, bool *g_updating_graph_mask, bool* g_graph_visited, bool *g_over, int no_of_nodes)
{
	int tid = blockIdx.x*MAX_THREADS_PER_BLOCK + threadIdx.x;
	if( tid<no_of_nodes && g_updating_graph_mask[tid])
	{

		g_graph_mask[tid]=true;
		g_graph_visited[tid]=true;
		*g_over=true;
		g_updating_graph_mask[tid]=false;
	}
}
