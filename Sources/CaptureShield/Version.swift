internal import CXCB

public enum CaptureShieldVersion { public static let string = "0.1.0" }
