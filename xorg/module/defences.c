/* CaptureShield Xorg module: protects the shield's own channels (selections, clients, root properties, commands). */
#include "cs.h"
#include <string.h>
#include "selection.h"

static Atom cs_command_atom;

static int
cs_prefixed(Atom a, const char *prefix)
{
    const char *name = NameForAtom(a);

    return name && !strncmp(name, prefix, strlen(prefix));
}

/* SetSelectionOwner on _CAPTURE_SHIELD_S* (the daemon's "I am running" selections) */
static void
cs_selection_hook(CallbackListPtr *list, void *data, void *call)
{
    XaceSelectionAccessRec *rec = call;

    (void) list;
    (void) data;
    if (rec->status != Success || !rec->ppSel || !*rec->ppSel || !cs_rule_on(CS_RULE_DAEMON))
        return;
    if (!(rec->access_mode & (DixSetAttrAccess | DixCreateAccess | DixWriteAccess)))
        return;
    if (!cs_prefixed((*rec->ppSel)->selection, "_CAPTURE_SHIELD_S") ||
        cs_client_trusted(rec->client))
        return;
    rec->status = BadAccess;
    cs_report(rec->client, (*rec->ppSel)->selection, CS_KIND_SELECTION);
}

/* KillClient of a trusted client */
static void
cs_client_hook(CallbackListPtr *list, void *data, void *call)
{
    XaceClientAccessRec *rec = call;

    (void) list;
    (void) data;
    if (rec->status != Success || !cs_rule_on(CS_RULE_DAEMON) || !rec->target ||
        rec->target == rec->client || !(rec->access_mode & DixDestroyAccess))
        return;
    if (cs_client_trust(rec->target) == CS_TRUST_NONE || cs_client_trusted(rec->client))
        return;
    rec->status = BadAccess;
    /* the XID KillClient named (already in host order: the core swapped the request) */
    cs_report(rec->client, rec->client->majorOp == X_KillClient && rec->client->req_len == 2
              ? ((xResourceReq *) rec->client->requestBuffer)->id
              : rec->target->clientAsMask, CS_KIND_KILL);
}

/* SendEvent of a _CAPTURE_SHIELD_COMMAND ClientMessage to a trusted client's window */
static void
cs_command_send_check(XaceSendAccessRec *rec)
{
    int i, owner;

    if (!cs_rule_on(CS_RULE_DAEMON))
        return;
    if (!cs_command_atom)
        cs_command_atom = MakeAtom("_CAPTURE_SHIELD_COMMAND",
                                   strlen("_CAPTURE_SHIELD_COMMAND"), TRUE);
    for (i = 0; i < rec->count; i++)
        if ((rec->events[i].u.u.type & 0x7f) == ClientMessage &&
            rec->events[i].u.clientMessage.u.l.type == cs_command_atom)
            break;
    if (i == rec->count || cs_client_trusted(rec->client))
        return;
    owner = CLIENT_ID(rec->pWin->drawable.id);
    if (owner <= 0 || owner >= currentMaxClients || !clients[owner] ||
        !cs_client_trusted(clients[owner]))
        return;
    rec->status = BadAccess;
    cs_report(rec->client, rec->pWin->drawable.id, CS_KIND_COMMAND);
}

/* The one XACE_SEND_ACCESS callback of the module: the command rule above, then the
 * input rule (input.c). The server's own deliveries (no client: DeliverFocusedEvent,
 * twice per key event) return at the first test. */
static void
cs_send_hook(CallbackListPtr *list, void *data, void *call)
{
    XaceSendAccessRec *rec = call;

    (void) list;
    (void) data;
    if (rec->status != Success || !rec->client || !rec->pWin)
        return;
    cs_command_send_check(rec);
    cs_input_send_check(rec);
}

/* Root properties named _CAPTURE_SHIELD_*: called from the property hook */
int
cs_root_property_refused(ClientPtr client, WindowPtr win, Atom name, Mask mode)
{
    if (!cs_rule_on(CS_RULE_DAEMON) || win->parent)
        return 0;
    if (!(mode & (DixWriteAccess | DixDestroyAccess | DixCreateAccess | DixSetAttrAccess |
                  DixBlendAccess)))
        return 0;
    if (!cs_prefixed(name, "_CAPTURE_SHIELD_") || cs_client_trusted(client))
        return 0;
    cs_report(client, name, CS_KIND_PROPERTY);
    return 1;
}

Bool
cs_defences_init(void)
{
    cs_command_atom = 0;
    return cs_add_callback(&XaceHooks[XACE_SELECTION_ACCESS], cs_selection_hook, NULL) &&
        cs_add_callback(&XaceHooks[XACE_CLIENT_ACCESS], cs_client_hook, NULL) &&
        cs_add_callback(&XaceHooks[XACE_SEND_ACCESS], cs_send_hook, NULL);
}
