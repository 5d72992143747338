// Rodinia 3.1, cuda/kmeans/kmeans_cuda_kernel.cu: kmeansPoint with the centres in __constant__
// memory (the texture fetch of the features as the plain global load the port makes of it:
// upstream reads t_features through tex1Dfetch; `#define FLT_MAX` as upstream's <float.h>).
// Upstream benchmark: kdd_cup (494020 points, 34 features), 5 clusters; this one: 494020 points,
// 16 features (the port's MAX_FEATURES), 5 clusters.
#include <float.h>

#define ASSUMED_NR_CLUSTERS 32
#define MAX_FEATURES 16

__constant__ float c_clusters[ASSUMED_NR_CLUSTERS*MAX_FEATURES];		/* constant memory for cluster centers */

__global__ void
kmeansPoint(float  *features,			/* in: [npoints*nfeatures] */
            int     nfeatures,
            int     npoints,
            int     nclusters,
            int    *membership
			)
{

	// block ID
	const unsigned int block_id = gridDim.x*blockIdx.y+blockIdx.x;
	// point/thread ID
	const unsigned int point_id = block_id*blockDim.x*blockDim.y + threadIdx.x;

	int  index = -1;

	if (point_id < npoints)
	{
		int i, j;
		float min_dist = FLT_MAX;
		float dist;													/* distance square between a point to cluster center */

		/* find the cluster center id with min distance to pt */
		for (i=0; i<nclusters; i++) {
			int cluster_base_index = i*nfeatures;					/* base index of cluster centers for inverted array */
			float ans=0.0;												/* Euclidean distance sqaure */

			for (j=0; j < nfeatures; j++)
			{
				int addr = point_id + j*npoints;					/* appropriate index of data point */
				float diff = (features[addr] -
							  c_clusters[cluster_base_index + j]);	/* distance between a data point to cluster centers */
				ans += diff*diff;									/* sum of squares */
			}
			dist = ans;

			/* see if distance is smaller than previous ones:
			if so, change minimum distance and save index of cluster center */
			if (dist < min_dist) {
				min_dist = dist;
				index    = i;
			}
		}
	}

	if (point_id < npoints)
	{
		/* assign the membership to object point_id */
		membership[point_id] = index;
	}
}
