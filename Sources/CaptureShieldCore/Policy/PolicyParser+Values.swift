// The validator's value readers: matchers and their patterns, strings, booleans,
// integers, durations and choices, each reporting a diagnostic for a bad value.

import Foundation

extension PolicyParser.Validator {
  // MARK: Matchers

  mutating func matchers(_ v: JSONValue, key: String) -> [Matcher]? {
    guard case .array(let items) = v.kind else {
      fail(
        v.location,
        "'\(key)' must be an array of matchers (e.g. [{ class: \"KeePassXC\" }]), not \(v.typeDescription)"
      )
      return nil
    }
    var out: [Matcher] = []
    var ok = true
    for item in items {
      matcherCount += 1
      if matcherCount > PolicyParser.maxMatchersPerFile {
        if matcherCount == PolicyParser.maxMatchersPerFile + 1 {
          fail(
            item.location,
            "too many matchers in one file (the limit is \(PolicyParser.maxMatchersPerFile))")
        }
        return nil
      }
      if let m = matcher(item, listKey: key) { out.append(m) } else { ok = false }
    }
    return ok ? out : nil
  }

  mutating func matcher(_ v: JSONValue, listKey: String) -> Matcher? {
    guard case .object(let members) = v.kind else {
      fail(
        v.location,
        "each entry of '\(listKey)' must be a matcher object (e.g. { class: \"KeePassXC\" }), not \(v.typeDescription)"
      )
      return nil
    }
    let (f, hadUnknown) = checkKeys(members, allowed: PolicyParser.matcherKeys, context: "in matcher")
    var m = Matcher(location: v.location)
    var ok = !hadUnknown
    var hasCriterion = false
    for key in ["class", "instance", "title", "exe", "comm"] {
      guard let pv = f[key] else { continue }
      hasCriterion = true
      guard let p = pattern(pv, key: key) else {
        ok = false
        continue
      }
      switch key {
      case "class": m.class = p
      case "instance": m.instance = p
      case "title": m.title = p
      case "exe": m.exe = p
      default: m.comm = p
      }
    }
    for key in ["pid", "uid"] {
      guard let iv = f[key] else { continue }
      hasCriterion = true
      guard let n = integer(iv), n >= 0 else {
        fail(iv.location, "'\(key)' must be a non-negative integer, not \(describeNonInteger(iv))")
        ok = false
        continue
      }
      if key == "pid" { m.pid = n } else { m.uid = n }
    }
    if let nv = f["name"] {
      if let name = string(nv, key: "name") { m.name = name } else { ok = false }
    }
    if !hasCriterion && !hadUnknown {
      fail(
        v.location,
        "empty matcher: give at least one of class, instance, title, exe, comm, pid, uid")
      ok = false
    }
    return ok ? m : nil
  }

  mutating func pattern(_ v: JSONValue, key: String) -> Pattern? {
    guard case .string(let s) = v.kind else {
      fail(v.location, "'\(key)' must be a string (a glob or /regex/), not \(v.typeDescription)")
      return nil
    }
    guard lengthOK(s, v, key: key) else { return nil }
    if s.count >= 2, s.hasPrefix("/"), s.hasSuffix("/") {
      do {
        return try Pattern.parse(s)
      } catch {
        let body = String(s.dropFirst().dropLast())
        fail(
          v.location,
          "bad regular expression '\(PolicyParser.show(s))' for '\(key)': \(PolicyParser.regexComplaint(body, error))"
        )
        return nil
      }
    }
    do {
      _ = try Glob.parse(s)
      return try Pattern.parse(s)
    } catch let error as Glob.SyntaxError {
      fail(
        v.location(ofScalarAt: error.offset), "bad pattern '\(PolicyParser.show(s))' for '\(key)': \(error.message)")
    } catch {
      fail(v.location, "bad pattern '\(PolicyParser.show(s))' for '\(key)': \(error)")
    }
    return nil
  }

  // MARK: Scalars

  mutating func lengthOK(_ s: String, _ v: JSONValue, key: String) -> Bool {
    let n = s.unicodeScalars.count
    guard n <= PolicyParser.maxStringLength else {
      fail(
        v.location,
        "'\(key)' is too long (\(n) characters; the limit is \(PolicyParser.maxStringLength))")
      return false
    }
    return true
  }

  mutating func string(_ v: JSONValue, key: String) -> String? {
    guard case .string(let s) = v.kind else {
      fail(v.location, "'\(key)' must be a string, not \(v.typeDescription)")
      return nil
    }
    return lengthOK(s, v, key: key) ? s : nil
  }

  mutating func bool(_ v: JSONValue, key: String) -> Bool? {
    guard case .bool(let b) = v.kind else {
      fail(v.location, "'\(key)' must be a boolean (true or false), not \(v.typeDescription)")
      return nil
    }
    return b
  }

  func integer(_ v: JSONValue) -> Int? {
    if case .int(let n) = v.kind { return n }
    return nil
  }

  /// `a string`, or for numbers the number itself (`-1`, `1.5`).
  func describeNonInteger(_ v: JSONValue) -> String {
    switch v.kind {
    case .int(let n): return String(n)
    case .double(let d): return d.isNaN ? "NaN" : String(d)
    default: return v.typeDescription
    }
  }

  mutating func duration(_ v: JSONValue, key: String, orOff: Bool = false) -> PolicyDuration? {
    duration(v, key: key, or: orOff ? "off" : nil)
  }

  /// A duration, or (when `word` is given) that word, which the caller checks first.
  mutating func duration(_ v: JSONValue, key: String, or word: String?) -> PolicyDuration? {
    guard case .string(let s) = v.kind else {
      let what = word.map { "a duration or \"\($0)\"" } ?? "a duration"
      fail(v.location, "'\(key)' must be a string (\(what)), not \(v.typeDescription)")
      return nil
    }
    guard let d = PolicyDuration(parsing: s) else {
      let forms = (word.map { "\"\($0)\" or " } ?? "") + PolicyParser.durationForms
      fail(v.location, "bad duration '\(PolicyParser.show(s))': expected \(forms)")
      return nil
    }
    return d
  }

  /// One of `allowed` (case-sensitive), else a diagnostic.
  mutating func choice(_ v: JSONValue, key: String, _ allowed: [String]) -> String? {
    let expected = PolicyParser.orList(allowed.map { "\"\($0)\"" })
    guard case .string(let s) = v.kind else {
      fail(v.location, "'\(key)' must be a string (\(expected)), not \(v.typeDescription)")
      return nil
    }
    guard allowed.contains(s) else {
      var message = "unknown value '\(PolicyParser.show(s))' for '\(key)': expected \(expected)"
      if let guess = PolicyParser.closest(to: s, in: allowed) { message += " (did you mean \"\(guess)\"?)" }
      fail(v.location, message)
      return nil
    }
    return s
  }
}
