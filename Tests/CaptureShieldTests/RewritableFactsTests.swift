import Testing

@testable import CaptureShield

private func pat(_ s: String) -> Pattern { try! Pattern.parse(s) }

/// `policy explain` says which rules look at facts any X client can rewrite.
@Suite("rules on facts any client can rewrite")
struct RewritableFactsTests {
  @Test(
    "class, instance and title are window properties any client can rewrite; exe, comm, pid, uid are not",
    arguments: Criterion.allCases)
  func criterion(_ c: Criterion) {
    #expect(c.anyClientCanRewrite == [.class, .instance, .title].contains(c))
  }

  @Test(
    "a note for each rule with a rewritable criterion, naming them; none for rules on exe, comm, pid or uid",
    arguments: [
      (Matcher(class: pat("KeePassXC")), "class"),
      (Matcher(title: pat("*Banking*")), "title"),
      (Matcher(class: pat("Foo"), instance: pat("foo"), exe: pat("/usr/bin/foo")), "class, instance"),
      (Matcher(exe: pat("/usr/bin/keepassxc")), nil),
      (Matcher(comm: pat("keepassxc"), uid: 1000), nil),
    ])
  func notes(_ m: Matcher, named: String?) {
    var p = Policy()
    p.secure = [m]
    let notes = p.explainWindow(facts: Facts(), tag: .absent).rewritableNotes
    if let named {
      #expect(notes.count == 1)
      #expect(notes.first?.hasPrefix("note: rule #1 ") == true)
      #expect(notes.first?.contains("looks at \(named), which any X client can rewrite") == true, "\(notes)")
    } else {
      #expect(notes.isEmpty, "\(notes)")
    }
  }
}
