// The copied-text guard's own RECORD context: who sent each ConvertSelection.
//
// A SelectionRequest names the requestor window, not the client that sent the
// ConvertSelection, and any client may name any window. RECORD names the sender. This
// context records two core requests of every client, both rare: ConvertSelection (24) and
// SetSelectionOwner (22, of which only the guard's own matter: `ConversionLedger`). It is
// the guard's, not the capture detector's: the guard works the same whatever the detector
// records, and reads its records in its own order (the ledger needs them in the server's).
//
// The guard's connection creates the context and stays recorded (its SetSelectionOwner and
// its sync markers are part of the stream); a second connection enables it and only
// receives, as RECORD requires (see `CaptureDetector`). The server flushes the records of
// a ConvertSelection when it next writes to any client, here at the latest when it sends
// the SelectionRequest to the guard.

internal import CXCB
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Records ConvertSelection and SetSelectionOwner of all clients on a context created on
/// `control` (the guard's connection; it stays recorded). One owner, one thread (the
/// daemon's loop).
final class SelectionRecorder {
  private let stream: RecordStream
  var hasError: Bool { stream.hasError }
  var fileDescriptor: Int32 { stream.fileDescriptor }
  /// The data connection's resource-id base (a connection of the daemon's own).
  var dataBase: UInt32 { stream.data.ownBase }

  init(control: XConnection, startTimeout: Duration = .seconds(2)) throws(XError) {
    stream = try RecordStream(
      control: control, opcodes: [ConversionLedger.setSelectionOwner, ConversionLedger.convertSelection],
      startTimeout: startTimeout, name: "copied-text guard")
  }

  /// Every record available now (non-blocking), decoded, in the server's order.
  func read(own: ConversionLedger.Own) -> [ConversionLedger.Recorded] {
    var out: [ConversionLedger.Recorded] = []
    stream.forEachRequest { request, sender, big in
      if let d = ConversionLedger.decode(request, sender: sender, bigEndian: big, own: own) { out.append(d) }
    }
    return out
  }
}
