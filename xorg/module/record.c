/* CaptureShield Xorg module: RECORD (no untrusted recording while a secure window exists). */
#include "cs.h"
#include "registry.h"
#include <string.h>
#include <byteswap.h>
#include <X11/extensions/recordproto.h>

/* A RECORD context delivers, to the client that enabled it, the requests, replies, events
 * and errors of the clients it records: a secure window's owner's PutImage data, its
 * ChangeProperty of WM_NAME, its text drawing, the trusted window manager's copies of the
 * title. The rule: while a secure window exists (cs_secure_count), no untrusted client has
 * a RECORD context enabled.
 * - CreateContext, RegisterClients and EnableContext from an untrusted client are refused
 *   with BadAccess (audited with cs_report) while a secure window exists;
 * - a context an untrusted client enabled before (no secure window then), or enabled while
 *   trusted by a grant since revoked, is freed when a window becomes secure (or protection
 *   resumes, or the grant ends): RECORD's own delete function flushes what was recorded
 *   before, sends EndOfData and lets the recording client run again (cs_record_sweep).
 * Trusted clients (the daemon) keep RECORD. */

static int cs_record_major = -1;
static int (*cs_orig_record)(ClientPtr);
static int (*cs_orig_srecord)(ClientPtr);
static RESTYPE cs_record_type;  /* RECORD's "RecordContext" resource type */
static int cs_record_enabled;   /* an EnableContext succeeded since the last sweep that
                                 * found no enabled context */

/* The head of RECORD's private RecordContextRec (record/record.c): its resource id, then
 * the client that enabled it (NULL: disabled). Unchanged since the extension was written;
 * checked against the resource id before use (cs_record_sweep). */
struct cs_record_head {
    XID id;
    ClientPtr pRecordingClient;
};

struct cs_record_list {
    XID ids[64];                /* contexts enabled by untrusted clients, to free */
    int n, more, enabled;
};

/* The client that enabled a context (NULL: disabled). If the layout check fails (a RECORD
 * whose context record starts differently), the context's creator, enabled or not. */
static ClientPtr
cs_record_recorder(void *value, XID id)
{
    struct cs_record_head *h = value;
    int idx = CLIENT_ID(id);

    if (h->id == id)
        return h->pRecordingClient;
    return idx > 0 && idx < currentMaxClients ? clients[idx] : NULL;
}

static void
cs_record_collect(void *value, XID id, void *data)
{
    struct cs_record_list *l = data;
    ClientPtr rec = cs_record_recorder(value, id);

    if (!rec)
        return;
    l->enabled = 1;
    if (cs_client_trusted(rec))
        return;
    if (l->n < (int) (sizeof(l->ids) / sizeof(l->ids[0])))
        l->ids[l->n++] = id;
    else
        l->more = 1;
}

/* Frees every RECORD context enabled by an untrusted client while a secure window exists:
 * RECORD's delete function disables it first (flushes what it recorded before, sends
 * EndOfData, lets the recording client run again). Called after a window's tag was
 * written, when protection resumes and when a grant is revoked. */
void
cs_record_sweep(void)
{
    struct cs_record_list l;
    int i, pass;

    if (!cs_record_type || !cs_record_enabled || !cs_rule_on(CS_RULE_RECORD) ||
        !cs_secure_count())
        return;
    for (pass = 0; pass < 64; pass++) {
        l.n = l.more = l.enabled = 0;
        for (i = 1; i < currentMaxClients; i++)
            if (clients[i] && !clients[i]->clientGone)
                FindClientResourcesByType(clients[i], cs_record_type, cs_record_collect, &l);
        for (i = 0; i < l.n; i++) {
            /* by id: freeing one context can close a recording client and free others */
            void *p;
            ClientPtr rec;
            if (dixLookupResourceByType(&p, l.ids[i], cs_record_type, NullClient,
                                        DixReadAccess) != Success ||
                !(rec = cs_record_recorder(p, l.ids[i])))
                continue;
            LogMessageVerb(X_INFO, 0, "CAPTURESHIELD: RECORD context 0x%lx of untrusted "
                           "client %d freed: a secure window exists\n",
                           (unsigned long) l.ids[i], rec->index);
            cs_report(rec, l.ids[i], CS_KIND_DENIED);
            FreeResource(l.ids[i], RT_NONE);
        }
        if (!l.more)
            break;
    }
    if (!l.enabled)
        cs_record_enabled = 0;
}

static int
cs_ProcRecord(ClientPtr c)
{
    int minor = c->req_len >= 1 ? ((xReq *) c->requestBuffer)->data : -1, r;

    if ((minor == X_RecordCreateContext || minor == X_RecordRegisterClients ||
         minor == X_RecordEnableContext) && cs_rule_on(CS_RULE_RECORD) &&
        !cs_client_trusted(c) && (cs_secure_count() || !cs_record_type)) {
        XID ctx = 0;
        if (c->req_len >= 2) {
            memcpy(&ctx, (char *) c->requestBuffer + 4, 4);
            if (cs_req_swapped(c))
                ctx = bswap_32(ctx);
        }
        c->errorValue = ctx;
        cs_report(c, ctx, CS_KIND_DENIED);
        return BadAccess;
    }
    r = c->swapped ? cs_orig_srecord(c) : cs_orig_record(c);
    if (minor == X_RecordEnableContext && r == Success)
        cs_record_enabled = 1;
    return r;
}

/* Wraps RECORD's request vectors (normal and swapped); the originals stay in
 * cs_orig_record / cs_orig_srecord (wrap.c restores them at close down). No RECORD
 * extension: nothing to guard. */
Bool
cs_record_init(void)
{
    ExtensionEntry *e;
    RESTYPE t;

    cs_record_major = -1;
    cs_record_type = 0;
    cs_record_enabled = 0;
    for (t = 1; t <= lastResourceType; t++)
        if (LookupResourceName(t) && !strcmp(LookupResourceName(t), "RecordContext"))
            cs_record_type = t;
    if (!(e = CheckExtension("RECORD")))
        return TRUE;
    if (!cs_record_type) {
        /* cannot find enabled contexts: refuse EnableContext to untrusted clients always */
        LogMessageVerb(X_WARNING, 0, "CAPTURESHIELD: RECORD context type not found\n");
    }
    cs_record_major = e->base;
    if (!cs_wrap_proc(cs_record_major, cs_ProcRecord, &cs_orig_record, &cs_orig_srecord))
        return FALSE;
    LogMessageVerb(X_INFO, 0, "CAPTURESHIELD: RECORD guarded (major %d)\n", cs_record_major);
    return TRUE;
}
