// A test recorder that sits open (`capture.idle`, bench row 10), built from C at test time (cc, libxcb,
// libxcb-shm). It connects, attaches a shared-memory segment (as x11vnc does at its start),
// prints "ready", then waits for commands written to `DIR/cmd`, and captures the way real
// recorders do, printing the red pixels it read in the rectangle:
// - `new`: a new X connection, MIT-SHM QueryExtension and Attach, one frame tick, then
//   ShmGetImage of the root (OBS's screen-capture source: xshm_capture_start connects anew);
// - `prelude`: on its first connection, a new segment attached (MIT-SHM Attach), one frame
//   tick, then ShmGetImage (a recorder that prepares a capture on a connection it keeps);
// - `bare`: on its first connection, ShmGetImage into the segment attached at its start, no
//   prelude (x11vnc when a viewer connects).
// A command may name its own tick in milliseconds ("prelude 16").

import Foundation

/// The recorder's C source and its build (IdleRecorderTests, shieldbench row 10).
public enum IdleRecorder {
  static let source = #"""
    #include <stdio.h>
    #include <stdlib.h>
    #include <string.h>
    #include <unistd.h>
    #include <sys/ipc.h>
    #include <sys/shm.h>
    #include <xcb/xcb.h>
    #include <xcb/shm.h>

    static int x, y, w, h, tick_us;
    static xcb_window_t root;

    /* Attaches a new segment (reply-less, flushed); its id is removed after the capture. */
    static xcb_shm_seg_t attach(xcb_connection_t *c, void **mem, int *id) {
      *id = shmget(IPC_PRIVATE, (size_t)w * h * 4, IPC_CREAT | 0600);
      *mem = shmat(*id, NULL, 0);
      xcb_shm_seg_t seg = xcb_generate_id(c);
      xcb_shm_attach(c, seg, *id, 0);
      xcb_flush(c);
      return seg;
    }

    static long capture(xcb_connection_t *c, xcb_shm_seg_t seg, void *mem) {
      xcb_shm_get_image_reply_t *r = xcb_shm_get_image_reply(c,
          xcb_shm_get_image(c, root, x, y, w, h, ~0u, XCB_IMAGE_FORMAT_Z_PIXMAP, seg, 0), NULL);
      if (!r) return -1;
      free(r);
      long red = 0;
      uint32_t *p = mem;
      for (long i = 0; i < (long)w * h; i++) if ((p[i] & 0xffffff) == 0xff0000) red++;
      return red;
    }

    static xcb_window_t first_root(xcb_connection_t *c) {
      return xcb_setup_roots_iterator(xcb_get_setup(c)).data->root;
    }

    int main(int argc, char **argv) {
      if (argc != 7) return 2;
      const char *dir = argv[1];
      x = atoi(argv[2]); y = atoi(argv[3]); w = atoi(argv[4]); h = atoi(argv[5]);
      tick_us = atoi(argv[6]) * 1000;
      char cmd_path[4096];
      snprintf(cmd_path, sizeof cmd_path, "%s/cmd", dir);
      xcb_connection_t *c0 = xcb_connect(NULL, NULL);
      if (xcb_connection_has_error(c0)) return 3;
      root = first_root(c0);
      void *mem0;
      int id0;
      xcb_shm_seg_t seg0 = attach(c0, &mem0, &id0);
      free(xcb_get_input_focus_reply(c0, xcb_get_input_focus(c0), NULL));
      shmctl(id0, IPC_RMID, NULL);  /* attached by the server: gone when both detach */
      printf("ready\n");
      fflush(stdout);
      for (;;) {
        FILE *f = fopen(cmd_path, "r");
        if (!f) { usleep(2000); continue; }
        char cmd[64] = {0};
        if (!fgets(cmd, sizeof cmd, f)) cmd[0] = 0;
        fclose(f);
        unlink(cmd_path);
        cmd[strcspn(cmd, "\n")] = 0;
        int ms = -1;  /* "prelude 16": this tick instead of argv's */
        char *space = strchr(cmd, ' ');
        if (space) { *space = 0; ms = atoi(space + 1); }
        tick_us = ms >= 0 ? ms * 1000 : atoi(argv[6]) * 1000;
        long red = -1;
        if (!strcmp(cmd, "quit")) return 0;
        if (!strcmp(cmd, "bare")) {
          red = capture(c0, seg0, mem0);
        } else if (!strcmp(cmd, "prelude")) {
          void *mem;
          int id;
          xcb_shm_seg_t seg = attach(c0, &mem, &id);
          usleep(tick_us);
          red = capture(c0, seg, mem);
          shmctl(id, IPC_RMID, NULL);
          xcb_shm_detach(c0, seg);
          shmdt(mem);
        } else if (!strcmp(cmd, "new")) {
          xcb_connection_t *c1 = xcb_connect(NULL, NULL);
          if (xcb_connection_has_error(c1)) return 4;
          const xcb_query_extension_reply_t *e = xcb_get_extension_data(c1, &xcb_shm_id);
          if (!e || !e->present) return 5;
          void *mem;
          int id;
          xcb_shm_seg_t seg = attach(c1, &mem, &id);
          usleep(tick_us);
          red = capture(c1, seg, mem);
          shmctl(id, IPC_RMID, NULL);
          shmdt(mem);
          xcb_disconnect(c1);
        }
        printf("%s %ld\n", cmd, red);
        fflush(stdout);
      }
    }
    """#

  /// Builds the recorder as `directory/idle-recorder`; returns its path.
  public static func build(in directory: String) async throws -> String {
    let c = directory + "/idle-recorder.c"
    try source.write(toFile: c, atomically: true, encoding: .utf8)
    let path = directory + "/idle-recorder"
    let cc = try await runCommand(
      "cc", ["-O1", "-Wall", "-Werror", "-o", path, c, "-lxcb", "-lxcb-shm"], timeout: .seconds(60))
    guard cc.succeeded else { throw ProcessError.io("cc failed: \(cc)") }
    return path
  }
}
