// Password fields anywhere: the accessibility bus's password text fields become secure
// views of their windows (and, while `PasswordViews.wholeWindowSecure`, the whole window).

extension Engine {
  /// Replaces the password fields shown (`Event.accessibleFields`): each window whose views
  /// changed gets a `secureViews` effect and an audit record, and is decided again.
  /// Returns the windows whose views or focus changed.
  mutating func passwordFieldsShown(
    _ fields: [AccessibleField], frames: [TopLevelFrame], fx: inout [Effect]
  ) -> [WindowID] {
    let known = frames.filter { windows[$0.window] != nil }
    let views = policy.passwordFields ? PasswordViews.views(fields: fields, frames: known) : [:]
    let focus = policy.passwordFields ? PasswordViews.focusedWindows(fields: fields, frames: known) : []
    var changed: [WindowID] = []
    for w in Set(views.keys).union(passwordViews.keys).sorted() where views[w] != passwordViews[w] {
      let rects = views[w] ?? []
      passwordViews[w] = views[w]
      fx.append(.secureViews(w, rects))
      fx.append(
        .audit(
          AuditRecord(
            "password-field",
            [
              ("window", .string(hex(w))), ("showing", .bool(!rects.isEmpty)),
              ("views", .string(rects.map(\.description).joined(separator: " "))),
            ])))
      if let s = windows[w] {
        let r = decide(s.info)
        if r != s.reason {
          setWindow(WindowState(info: s.info, reason: r))
          fx.append(
            .audit(
              AuditRecord(
                "secure-decision",
                [("window", .string(hex(w))), ("secure", .bool(r.isSecure)), ("reason", .string(r.description))]
                  + factsFields(effectiveFacts(s.info)))))
        }
      }
      changed.append(w)
    }
    changed += focus.symmetricDifference(passwordFocus).sorted()
    passwordFocus = focus
    return changed
  }
}

extension Engine {
  // MARK: Events

  /// `Event.accessibleFields`: the password fields shown now (`passwordFieldsShown`).
  mutating func accessibleFields(_ fields: [AccessibleField], frames: [TopLevelFrame], _ step: inout Step) {
    let changed = passwordFieldsShown(fields, frames: frames, fx: &step.fx)
    if !changed.isEmpty { step.stateChanged = true }
    step.touched += changed
  }
}
