// shieldbench: prints CaptureShield's benchmark figures (`make bench`).
import Foundation

let policy = runPolicyBenchmark()
let out = ProcessInfo.processInfo.environment["BENCH_JSON"] ?? "bench-results.json"
if let data = try? JSONSerialization.data(withJSONObject: ["policy": policy], options: [.prettyPrinted, .sortedKeys]) {
  _ = FileManager.default.createFile(atPath: out, contents: data)
  print("figures written to \(out)")
}
