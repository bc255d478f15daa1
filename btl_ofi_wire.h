/*
 * btl/ofi wire formats: every message btl/ofi sends of its own (emulated
 * RMA and atomics, rail notices, acknowledgements) and the header in
 * front of the pml's. The one place both ends' layout is written down;
 * no code lives here.
 */

#ifndef MCA_BTL_OFI_WIRE_H
#define MCA_BTL_OFI_WIRE_H

#include <stdint.h>

enum {
    MCA_BTL_OFI_MSG_AMO_REQ = 1,  /* emulated atomic: do this at your end */
    MCA_BTL_OFI_MSG_AMO_RESP = 2, /* emulated atomic: done, old value enclosed */
    MCA_BTL_OFI_MSG_AM = 3,       /* pml payload for the active-message tag in op */
    MCA_BTL_OFI_MSG_RAIL_CUT = 4, /* a link between a rail of the sender and one of ours is cut */
    MCA_BTL_OFI_MSG_ACK = 5,      /* numbered messages of one link arrived, up to a number */
    MCA_BTL_OFI_MSG_PUT = 6,      /* emulated put: store the enclosed bytes */
    MCA_BTL_OFI_MSG_GET = 7,      /* emulated get: send me these bytes */
    MCA_BTL_OFI_MSG_RMA_RESP = 8, /* emulated put stored, or get's bytes enclosed */
    MCA_BTL_OFI_MSG_PUTV = 9,     /* gathered small puts: store each enclosed piece */
    MCA_BTL_OFI_MSG_GETV = 10,    /* gathered small gets: send me each described piece */
    MCA_BTL_OFI_MSG_TYPES         /* one past the last */
};

/* hdr.rail of a message without a number */
#define MCA_BTL_OFI_NO_SEQ 0xff

/* Leading bytes of every message. */
typedef struct mca_btl_ofi_msg_hdr_t {
    uint8_t type;
    uint8_t op;    /* AMO: the btl atomic op; AM: the active-message tag */
    uint8_t flags; /* AMO: MCA_BTL_OFI_AMO_* */
    /* With several rails a message of the pml or of an atomic is numbered
     * on the link it was first posted to: `rail' is the receiver's rail
     * at that link's end (MCA_BTL_OFI_NO_SEQ: not numbered), `seq' its
     * number there. Sent again on another rail after that link failed, it
     * keeps both, so that the receiver takes it once (btl_ofi_seq.c). */
    uint8_t rail;
    uint32_t seq;
    /* the sender's process name (mca_btl_ofi_name_key): an atomic's
     * request is answered to it, a numbered message counted for it */
    uint64_t origin;
} mca_btl_ofi_msg_hdr_t;

#define MCA_BTL_OFI_AMO_32BIT 0x1
#define MCA_BTL_OFI_AMO_CSWAP 0x2
/* in a message of gathered puts: an atomic's request
 * (mca_btl_ofi_amo_req_t) follows their data, to be applied after them;
 * in its answer: the atomic's answer (mca_btl_ofi_amo_resp_t) follows the
 * header. In a message of gathered gets: the request follows their
 * descriptions, applied after they were read; in its answer the atomic's
 * answer follows their bytes. */
#define MCA_BTL_OFI_PUTV_AMO 0x4
/* in an atomic's request carried at the end of gathered puts: its origin
 * does not wait for it (MCA_BTL_OFI_ATOMIC_FLAG_UNHURRIED), so the answer
 * to both may wait for the target's next message to it or the target's
 * next progress pass (btl_ofi_answers.c) */
#define MCA_BTL_OFI_AMO_UNHURRIED 0x8
/* in a pml message (MCA_BTL_OFI_MSG_AM): an answer held for its receiver
 * (mca_btl_ofi_putv_amo_resp_t) rides at its end, after the payload */
#define MCA_BTL_OFI_AM_ANSWER 0x1

typedef struct mca_btl_ofi_amo_req_t {
    mca_btl_ofi_msg_hdr_t hdr;
    uint64_t req_id; /* origin's completion object, echoed back untouched */
    uint64_t addr;   /* target virtual address */
    uint64_t key;    /* registration the address must lie in */
    uint64_t operand;
    uint64_t compare;
} mca_btl_ofi_amo_req_t;

typedef struct mca_btl_ofi_amo_resp_t {
    mca_btl_ofi_msg_hdr_t hdr;
    uint64_t req_id;
    uint64_t result;
    int32_t status; /* OPAL_SUCCESS or the error the target saw */
    uint32_t pad;
} mca_btl_ofi_amo_resp_t;

/* An emulated put or get (where the provider's RMA cannot be trusted):
 * a put's bytes follow the header, one message per piece; a get asks for
 * up to MCA_BTL_OFI_EMU_WINDOW pieces in one message, answered with one
 * response per piece. A put's response may answer several consecutive
 * pieces of it (`pieces' of them, `len' bytes from `addr'). */
typedef struct mca_btl_ofi_rma_msg_t {
    mca_btl_ofi_msg_hdr_t hdr; /* RMA_RESP: op is MCA_BTL_OFI_MSG_GET when bytes follow */
    uint64_t req_id;           /* origin's operation, echoed back untouched */
    uint64_t addr;             /* target address (RESP: the request's, echoed) */
    uint64_t key;              /* PUT, GET: registration the bytes must lie in */
    uint64_t len;              /* bytes enclosed (PUT, RESP) or asked for (GET) */
    int32_t status;            /* RESP: OPAL_SUCCESS or the error the target saw */
    uint32_t pieces;           /* RESP: the messages of the window it accounts for */
    /* PUT, GET: the target's rail whose key `key' is; a piece queued when
     * its link failed is numbered on another rail's link, so hdr.rail
     * cannot tell */
    uint32_t key_rail;
    uint32_t pad;
} mca_btl_ofi_rma_msg_t;

/* A message of gathered puts (MCA_BTL_OFI_MSG_PUTV): the header above
 * (req_id; key and key_rail, the one registration every piece lies in;
 * len, the data bytes; pieces, how many), then `pieces' of these, then
 * their bytes one after the other. Answered by one RMA_RESP whose op is
 * MCA_BTL_OFI_MSG_PUTV, once every piece is stored, or with an error and
 * none stored. */
typedef struct mca_btl_ofi_putv_piece_t {
    uint64_t addr; /* target address */
    uint64_t len;
} mca_btl_ofi_putv_piece_t;

/* The answer to a message of gathered puts that carried an atomic
 * (MCA_BTL_OFI_PUTV_AMO): the puts' answer, then the atomic's. */
typedef struct mca_btl_ofi_putv_amo_resp_t {
    mca_btl_ofi_rma_msg_t resp;
    mca_btl_ofi_amo_resp_t amo;
} mca_btl_ofi_putv_amo_resp_t;

/* A message of gathered gets (MCA_BTL_OFI_MSG_GETV): the same header (len,
 * the bytes asked for; pieces, how many) and `pieces' descriptions as
 * above, no data. Answered by one RMA_RESP whose op is
 * MCA_BTL_OFI_MSG_GETV, the pieces' bytes one after the other behind it
 * (len of them), or with an error and none. */

/* Size of one emulated-RMA message where any message size works. */
#define MCA_BTL_OFI_RMA_MSG_SIZE 16384

/* Emulated-RMA messages that may be in flight to one peer: a put's pieces
 * not yet answered, a get's pieces asked for and not yet arrived. More
 * overrun the receiver's side of udp;ofi_rxd, which then loses messages
 * it acknowledged (seen with a thousand in flight). */
#define MCA_BTL_OFI_EMU_WINDOW 32

/* The link between the sender's rail from_rail and the receiver's rail
 * `rail' is cut: the receiver's traffic to the sender leaves it too. */
typedef struct mca_btl_ofi_rail_cut_t {
    mca_btl_ofi_msg_hdr_t hdr;
    uint32_t rail;
    uint32_t from_rail;
} mca_btl_ofi_rail_cut_t;

/* The numbered messages the receiver posted on the link ending at its
 * rail `rail' arrived, every one below `base' (sent every quarter window,
 * MCA_BTL_OFI_SEQ_WINDOW): it may forget them. */
typedef struct mca_btl_ofi_msg_ack_t {
    mca_btl_ofi_msg_hdr_t hdr;
    uint32_t rail;
    uint32_t base;
} mca_btl_ofi_msg_ack_t;

#endif /* MCA_BTL_OFI_WIRE_H */
