/*
 * btl/ofi fragments (two-sided descriptors); see btl_ofi_frag.h.
 */

#include "btl_ofi.h"
#include "btl_ofi_frag.h"

static void mca_btl_ofi_frag_construct(mca_btl_ofi_frag_t *frag)
{
    frag->base.des_segments = &frag->segment;
    frag->base.des_segment_count = 1;
    frag->endpoint = NULL;
}

OBJ_CLASS_INSTANCE(mca_btl_ofi_frag_t, mca_btl_base_descriptor_t, mca_btl_ofi_frag_construct, NULL);
