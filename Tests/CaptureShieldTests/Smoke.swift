import Testing

@testable import CaptureShield

@Test func versionIsSet() { #expect(!CaptureShieldVersion.string.isEmpty) }
