// The built-in secure list: password managers and credential prompts whose windows are
// secure with no policy file. Each entry is
// matched by what the real program was seen to set when it ran on Debian 12 (docs/policy.md,
// "Built-in secure programs": the table of WM_CLASS and executables and how each was found).

/// A program whose windows are secure out of the box (`Policy.defaultSecure`).
struct BuiltinSecureProgram: Sendable, Hashable {
  /// The name `policy explain`, `shieldctl list` and the audit log show ("built-in: NAME").
  var name: String
  /// The Debian package it comes from.
  var package: String
  /// The file name of its executable (`/proc/PID/exe`), matched as `*/NAME`; nil when the
  /// program runs in an interpreter (KeePass2 runs in mono).
  var exe: String?
  /// The class part of its windows' `WM_CLASS`; nil when it says nothing about the program
  /// (pinentry-fltk's class is FLTK's, `FLTK`) or was not seen (a program that was not run).
  var windowClass: String?

  init(name: String, package: String, exe: String?, windowClass: String?) {
    self.name = name
    self.package = package
    self.exe = exe
    self.windowClass = windowClass
  }

  /// Its rules: one on the executable (which the X server and /proc give, so another client
  /// cannot take the window out of it), one on the class (which covers a window whose
  /// client's executable is not known, a remote one say).
  var matchers: [Matcher] {
    var out: [Matcher] = []
    if let exe { out.append(Matcher(exe: try! Pattern.parse("*/" + exe), name: name)) }
    if let windowClass { out.append(Matcher(class: try! Pattern.parse(windowClass), name: name)) }
    return out
  }
}

extension Policy {
  /// The password managers and credential prompts secure out of the box, in the order their
  /// rules are tried (after every rule of the policy files). Each was run on Debian 12 and
  /// its windows' WM_CLASS and executable read, except the polkit agents marked below
  /// (they need a system bus, polkitd and a login session, which the test machine lacks):
  /// those are matched by the executable their package installs.
  static let builtinSecurePrograms: [BuiltinSecureProgram] = [
    .init(name: "KeePassXC", package: "keepassxc", exe: "keepassxc", windowClass: "KeePassXC"),
    // /usr/bin/keepass2 is a script: mono (`cli`, /usr/bin/mono-sgen) runs KeePass.exe.
    .init(name: "KeePass2", package: "keepass2", exe: nil, windowClass: "KeePass2"),
    .init(name: "pinentry-gtk-2", package: "pinentry-gtk2", exe: "pinentry-gtk-2", windowClass: "Pinentry-gtk-2"),
    .init(name: "pinentry-qt", package: "pinentry-qt", exe: "pinentry-qt", windowClass: "pinentry-qt"),
    .init(name: "pinentry-fltk", package: "pinentry-fltk", exe: "pinentry-fltk", windowClass: nil),
    .init(name: "pinentry-x2go", package: "pinentry-x2go", exe: "pinentry-x2go", windowClass: "pinentry-x2go"),
    // pinentry-gnome3 asks gcr's prompter (over the session bus), as GNOME Keyring does.
    .init(name: "gcr-prompter", package: "gcr", exe: "gcr-prompter", windowClass: "Gcr-prompter"),
    .init(name: "gcr-ssh-askpass", package: "gcr", exe: "gcr-ssh-askpass", windowClass: nil),
    .init(name: "KWallet", package: "libkf5wallet-bin", exe: "kwalletd5", windowClass: "kwalletd5"),
    .init(name: "KWalletManager", package: "kwalletmanager", exe: "kwalletmanager5", windowClass: "kwalletmanager5"),
    .init(name: "x11-ssh-askpass", package: "ssh-askpass", exe: "x11-ssh-askpass", windowClass: "SshAskpass"),
    .init(
      name: "gnome-ssh-askpass", package: "ssh-askpass-gnome", exe: "gnome-ssh-askpass",
      windowClass: "Gnome-ssh-askpass"),
    .init(name: "ksshaskpass", package: "ksshaskpass", exe: "ksshaskpass", windowClass: "ksshaskpass"),
    .init(
      name: "ssh-askpass-fullscreen", package: "ssh-askpass-fullscreen", exe: "ssh-askpass-fullscreen",
      windowClass: "Ssh-askpass-fullscreen"),
    .init(name: "lxpolkit", package: "lxpolkit", exe: "lxpolkit", windowClass: "Lxpolkit"),
    // Not run (no system bus here): matched by the executable their package installs.
    .init(
      name: "polkit-gnome", package: "policykit-1-gnome", exe: "polkit-gnome-authentication-agent-1",
      windowClass: nil),
    .init(
      name: "polkit-mate", package: "mate-polkit", exe: "polkit-mate-authentication-agent-1", windowClass: nil),
    .init(name: "lxqt-policykit", package: "lxqt-policykit", exe: "lxqt-policykit-agent", windowClass: nil),
    .init(
      name: "polkit-kde", package: "polkit-kde-agent-1", exe: "polkit-kde-authentication-agent-1",
      windowClass: nil),
  ]

  /// The rules of `builtinSecurePrograms`, tried after the files' `secure` rules unless a
  /// file sets `replaceDefaultSecure: true`.
  public static let defaultSecure: [Matcher] = builtinSecurePrograms.flatMap(\.matchers)
}
