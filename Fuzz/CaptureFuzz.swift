// libFuzzer entry: RECORD reply decoding, request splitting, the capture classifier, the
// X property decoders and the ELF dependency parser on arbitrary bytes. Built by scripts/fuzz.sh.

let resolvedCatalog = CaptureCatalog.standard.resolved(extensions: [
  "MIT-SHM": 130, "Composite": 142, "RENDER": 139, "DRI3": 149, "DAMAGE": 143, "XFIXES": 138, "RECORD": 146,
  "DRI2": 150, "GLX": 151,
])

@_cdecl("LLVMFuzzerTestOneInput")
public func captureFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let raw = UnsafeRawBufferPointer(start: data, count: size)
  let big = size > 0 && data[0] & 1 == 1
  _ = resolvedCatalog.classify(raw, clientBase: 0x0020_0000, resourceMask: 0x001F_FFFF, bigEndian: big) { _ in true }
  if let reply = RecordedReply.decode(raw) {
    RecordedReply.forEachRequest(in: UnsafeRawBufferPointer(rebasing: raw[reply.data]), bigEndian: big) { request in
      _ = resolvedCatalog.classify(request, clientBase: reply.idBase, resourceMask: 0x001F_FFFF) { _ in false }
    }
  }
  RecordedReply.forEachRequest(in: raw, bigEndian: big) { _ in }
  let bytes = Array(raw)
  _ = PropertyDecoding.text(bytes, utf8: true)
  _ = PropertyDecoding.text(bytes, utf8: false)
  _ = PropertyDecoding.wmClass(bytes)
  _ = PropertyDecoding.cardinal(format: size > 0 ? data[0] : 0, bytes: bytes)
  _ = TagState.decode(isCardinal: size > 1 && data[1] & 1 == 1, format: size > 0 ? data[0] : 0, bytes: bytes)
  // ELF dynamic sections (programs in a PATH directory any user can write to).
  _ = ElfDependencies.parse { offset, count in
    offset >= 0 && count >= 0 && offset <= size && count <= size - offset ? Array(bytes[offset..<offset + count]) : nil
  }
  return 0
}
