import Foundation
import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

/// `text` parsed as a policy file; its diagnostics, if any, recorded as a test issue.
func parseOK(_ text: String, path: String = "t.json5") throws -> PolicyFile {
  do {
    return try PolicyParser.parse(text, path: path)
  } catch {
    Issue.record("unexpected diagnostics:\n\(error)")
    throw error
  }
}
