// libFuzzer entry: the policy parser (JSON5, schema, globs, regexes with the
// catastrophic-shape check) on arbitrary bytes. Built by scripts/fuzz.sh.

@_cdecl("LLVMFuzzerTestOneInput")
public func policyFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
  if let file = try? PolicyParser.parse(text, path: "fuzz.json5") {
    // Exercise the compiled patterns too.
    let policy = PolicyLoader.merge([file])
    for m in policy.secure.prefix(8) {
      _ = m.class?.matches(text)
      _ = m.title?.matches(String(text.prefix(256)))
    }
  }
  return 0
}
