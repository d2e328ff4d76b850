/* CaptureShield X extension: wire protocol structures (shared by the module and clients). */
#ifndef CAPTURESHIELDPROTO_H
#define CAPTURESHIELDPROTO_H

#include <X11/Xmd.h>

#define CAPTURESHIELD_NAME "CAPTURESHIELD"

#define X_CaptureShieldQueryVersion 0
#define X_CaptureShieldGrant 1
#define X_CaptureShieldRevoke 2
#define X_CaptureShieldSelectInput 3
#define X_CaptureShieldGetClientTrust 4
#define X_CaptureShieldSetProtection 5          /* since 1.1 */

#define CaptureShieldNotify 0
#define CaptureShieldNumberEvents 1
#define CaptureShieldNotifyMask 1
/* since 1.2: kind 6 events, one each time a window's tag is written (its app tag or the
 * policy tag, valid or not) or it stops being secure; a daemon then need not watch every
 * window to learn about tagged ones */
#define CaptureShieldSecureMask 2

#define CaptureShieldModeCensor 0
#define CaptureShieldModeDeny 1
#define CaptureShieldKindCensored 0
#define CaptureShieldKindDenied 1
/* since 1.1: a daemon defence refused (reader = the offender) */
#define CaptureShieldKindSelection 2    /* drawable = the selection atom */
#define CaptureShieldKindKill 3         /* drawable = the XID KillClient named */
#define CaptureShieldKindProperty 4     /* drawable = the root property atom */
#define CaptureShieldKindCommand 5      /* drawable = the SendEvent destination window */
/* since 1.2, to clients that selected CaptureShieldSecureMask: a window's tag was written
 * (reader = the window's owner, drawable = the window, request = the tagging request) */
#define CaptureShieldKindSecure 6
/* module of issue 26 (same version): trust refused or lost (reader = that client, pid =
 * its pid, drawable = the reason: 1 injected code, 2 handover, 3 namespace, 4 tracer,
 * 5 path owner, 6 daemon argv, 7 daemon uid, 8 process gone, 9 exe changed; the request
 * fields are that client's last request, if any) */
#define CaptureShieldKindTrust 7
/* module of issue 27 (same version, secure input): an untrusted client was refused the keys of a focused secure
 * window, or input into one (reader = the offender, drawable = the secure window); at most
 * one per client per focus period */
#define CaptureShieldKindInput 8

typedef struct {
    CARD8 reqType;
    CARD8 shieldReqType;
    CARD16 length;              /* 2 */
    CARD16 majorVersion;
    CARD16 minorVersion;
} xCaptureShieldQueryVersionReq;

typedef struct {
    CARD8 type;                 /* X_Reply */
    CARD8 mode;                 /* 0 censor, 1 deny */
    CARD16 sequenceNumber;
    CARD32 length;              /* 0 */
    CARD16 majorVersion;
    CARD16 minorVersion;
    CARD8 trust;                /* the caller's trust (see GetClientTrust) */
    CARD8 pad0[3];
    CARD32 pad1, pad2, pad3, pad4;
} xCaptureShieldQueryVersionReply;

/* Grant, Revoke, GetClientTrust: one XID naming a client (its resource base or any XID
 * it owns). SelectInput: a mask instead. */
typedef struct {
    CARD8 reqType;
    CARD8 shieldReqType;
    CARD16 length;              /* 2 */
    CARD32 client;
} xCaptureShieldGrantReq, xCaptureShieldGetClientTrustReq;

typedef struct {
    CARD8 reqType;
    CARD8 shieldReqType;
    CARD16 length;              /* 2 */
    CARD32 mask;
} xCaptureShieldSelectInputReq;

/* SetProtection (1.1): 0 pauses censoring/denying reads of secure windows, 1 resumes. */
typedef struct {
    CARD8 reqType;
    CARD8 shieldReqType;
    CARD16 length;              /* 2 */
    CARD32 on;
} xCaptureShieldSetProtectionReq;

typedef struct {
    CARD8 type;                 /* X_Reply */
    CARD8 trust;                /* 0 none, 1 server, 2 Trust list, 3 granted */
    CARD16 sequenceNumber;
    CARD32 length;              /* 0 */
    CARD32 base;                /* the client's resource-id base */
    CARD32 pad1, pad2, pad3, pad4, pad5;
} xCaptureShieldGetClientTrustReply;

typedef struct {
    CARD8 type;                 /* event base + CaptureShieldNotify */
    CARD8 kind;                 /* 0 censored, 1 denied */
    CARD16 sequenceNumber;
    CARD32 reader;              /* resource-id base of the reading client */
    CARD32 drawable;            /* what it read (window, pixmap or picture) */
    CARD32 time;                /* server milliseconds */
    CARD8 requestMajor;
    CARD8 pad0;
    CARD16 requestMinor;
    CARD32 pid;                 /* the reader's PID as the server knows it (0: unknown) */
    CARD32 pad2, pad3;
} xCaptureShieldNotifyEvent;

#endif
