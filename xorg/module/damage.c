/* CaptureShield Xorg module: what DAMAGE tells about a secure window (rule damage).
 *
 * A DAMAGE object reports where and when a drawable changed: on a secure window, or on
 * the root that holds it, that is every keystroke's time and the caret's place (the red
 * team counted 17 boxes for 16 key presses into a focused password field). For the damage
 * objects of untrusted clients, the module takes the secret area (what the client may
 * not read of the drawable, cs_secret_for_read) out of the damage before the client hears
 * of it: a report whose region lies wholly in it is not delivered, and the damage the
 * object keeps (which DamageSubtract hands out as its "parts" region) never holds it.
 * Objects of trusted clients (the compositor) report everything.
 *
 * How: the DAMAGE request vector is wrapped (both byte orders: an extension major); after
 * an untrusted client's DamageCreate the new object's report function becomes
 * cs_damage_report, which filters and calls the extension's own (DamageExtReport); before
 * a DamageSubtract the object's accumulated damage is cleaned the same way. The extension's
 * resource record (damageext's DamageExtRec, not in the SDK) is mirrored below for its
 * first field, the DamagePtr. */
#include "cs.h"
#include "damagestr.h"
#include "registry.h"
#include <string.h>
#include <byteswap.h>
#include <X11/extensions/damageproto.h>

/* damageext/damageextint.h: struct _DamageExt begins with its DamagePtr, then the
 * drawable, the level and the client */
struct cs_damage_ext {
    DamagePtr pDamage;
    DrawablePtr pDrawable;
    DamageReportLevel level;
    ClientPtr pClient;
};

static struct {
    int major;
    RESTYPE type;
    CsProcPtr orig, sorig;
    DamageReportFunc report;    /* the extension's own report function */
} cs_damage_st;

/* Takes the secret part for `client` out of `r` (drawable coordinates of `draw`).
 * Returns 1 when something was taken out. */
static int
cs_damage_clean(ClientPtr client, DrawablePtr draw, RegionPtr r)
{
    RegionRec secret;
    BoxPtr e;
    int hit;

    if (!RegionNotEmpty(r) || !cs_secure_count() || !cs_rule_on(CS_RULE_DAMAGE) ||
        cs_client_trusted(client))
        return 0;
    e = RegionExtents(r);
    RegionNull(&secret);
    hit = cs_secret_for_read(client, draw, e->x1, e->y1, e->x2 - e->x1, e->y2 - e->y1,
                             &secret);
    if (hit && !RegionSubtract(r, r, &secret))
        RegionEmpty(r);         /* out of memory: nothing reported (fail closed) */
    RegionUninit(&secret);
    return hit;
}

static void
cs_damage_report(DamagePtr pDamage, RegionPtr pRegion, void *closure)
{
    struct cs_damage_ext *ext = closure;

    if (ext && ext->pClient && cs_damage_clean(ext->pClient, pDamage->pDrawable, pRegion)) {
        /* the kept damage (what DamageSubtract hands out) loses the secret part too */
        if (pRegion != &pDamage->damage)
            cs_damage_clean(ext->pClient, pDamage->pDrawable, &pDamage->damage);
        if (!RegionNotEmpty(pRegion))
            return;
    }
    cs_damage_st.report(pDamage, pRegion, closure);
}

static struct cs_damage_ext *
cs_damage_lookup(XID id)
{
    void *p = NULL;

    if (!cs_damage_st.type ||
        dixLookupResourceByType(&p, id, cs_damage_st.type, serverClient, DixReadAccess) !=
        Success)
        return NULL;
    return p;
}

static int
cs_ProcDamage(ClientPtr c)
{
    int minor = c->req_len >= 2 ? ((xReq *) c->requestBuffer)->data : -1, r;
    CARD32 id = 0;
    struct cs_damage_ext *ext;

    if ((minor == X_DamageCreate || minor == X_DamageSubtract) && c->req_len >= 2) {
        memcpy(&id, (char *) c->requestBuffer + 4, 4);
        if (cs_req_swapped(c))
            id = bswap_32(id);
    }
    if (minor == X_DamageSubtract && (ext = cs_damage_lookup(id)) && ext->pDamage &&
        ext->pClient)
        cs_damage_clean(ext->pClient, ext->pDamage->pDrawable, &ext->pDamage->damage);
    r = cs_req_swapped(c) ? cs_damage_st.sorig(c) : cs_damage_st.orig(c);
    if (minor == X_DamageCreate && r == Success && (ext = cs_damage_lookup(id)) &&
        ext->pDamage && ext->pDamage->closure == ext && ext->pDamage->damageReport) {
        if (!cs_damage_st.report)
            cs_damage_st.report = ext->pDamage->damageReport;
        if (ext->pDamage->damageReport == cs_damage_st.report)
            ext->pDamage->damageReport = cs_damage_report;
    }
    return r;
}

Bool
cs_damage_init(void)
{
    ExtensionEntry *e;
    RESTYPE t;

    memset(&cs_damage_st, 0, sizeof(cs_damage_st));
    if (!(e = CheckExtension(DAMAGE_NAME)))
        return TRUE;
    for (t = 1; t <= lastResourceType; t++)
        if (LookupResourceName(t) && !strcmp(LookupResourceName(t), "DamageExt"))
            cs_damage_st.type = t;
    if (!cs_damage_st.type) {
        LogMessageVerb(X_WARNING, 0, "CAPTURESHIELD: DAMAGE's resource type not found: "
                       "damage reports of secure windows are not filtered\n");
        return TRUE;
    }
    cs_damage_st.major = e->base;
    return cs_wrap_proc(cs_damage_st.major, cs_ProcDamage, &cs_damage_st.orig,
                        &cs_damage_st.sorig);
}
