/*
 * btl/ofi numbered messages (btl_ofi_seq.c).
 */

#ifndef MCA_BTL_OFI_SEQ_H
#define MCA_BTL_OFI_SEQ_H

#include "btl_ofi_frag.h"
#include "btl_ofi_types.h"

BEGIN_C_DECLS

/* The message types that are numbered (with several rails): the pml's and
 * those of emulated atomics, puts and gets, not acknowledgements or
 * notices (a later one says the same). */
static inline bool mca_btl_ofi_msg_numbered(int type)
{
    return MCA_BTL_OFI_MSG_AM == type || MCA_BTL_OFI_MSG_AMO_REQ == type
           || MCA_BTL_OFI_MSG_AMO_RESP == type || MCA_BTL_OFI_MSG_PUT == type
           || MCA_BTL_OFI_MSG_GET == type || MCA_BTL_OFI_MSG_RMA_RESP == type;
}

/* fi_send of FRAG's LEN bytes with several rails (context lock held),
 * numbered unless a copy sent again. */
ssize_t mca_btl_ofi_seq_send(mca_btl_ofi_context_t *context, mca_btl_ofi_frag_t *frag, size_t len);
/* The completion of a fragment not PLAIN (several rails): true when done
 * with; else the caller goes on, and keeps *KEEP (when set) with
 * mca_btl_ofi_seq_keep once the pml's callback ran. */
bool mca_btl_ofi_seq_settle(mca_btl_ofi_frag_t *frag, int status, mca_btl_ofi_frag_t **keep);
void mca_btl_ofi_seq_keep(mca_btl_ofi_frag_t *keep);
/* A numbered message received: true when it is new (take it), false for
 * one already taken. */
bool mca_btl_ofi_seq_accept(const mca_btl_ofi_msg_hdr_t *hdr);
/* A peer's acknowledgement (MCA_BTL_OFI_MSG_ACK). */
void mca_btl_ofi_seq_acked(mca_btl_ofi_context_t *context, const void *buf, size_t len);

/* A copy of FRAG's message, ours (no callback), or NULL. */
mca_btl_ofi_frag_t *mca_btl_ofi_frag_copy(mca_btl_ofi_frag_t *frag);
/* Send FRAG (ours) again on its endpoint's detour, number unchanged. */
void mca_btl_ofi_frag_resend(mca_btl_ofi_frag_t *frag);

/* Acknowledge what peers numbered to MODULE's rail and we have not
 * acknowledged yet (several rails; from the periodic peer check). */
void mca_btl_ofi_seq_ack_due(mca_btl_ofi_module_t *module);
/* A link of MODULE's rail failed: an acknowledgement sent on it may be
 * lost, so the next mca_btl_ofi_seq_ack_due sends each again (over the
 * detour where there is one). */
void mca_btl_ofi_seq_ack_again(mca_btl_ofi_module_t *module);

END_C_DECLS

#endif /* MCA_BTL_OFI_SEQ_H */
