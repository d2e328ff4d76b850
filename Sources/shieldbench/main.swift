import CaptureShield
import Foundation
let a = CommandLine.arguments
switch a.count > 1 ? a[1] : "" {
case "watch": exit(Watcher.run(WatchOptions(display: nil, policyPaths: Array(a.dropFirst(2)))))
case "win":
  var o = TestWindowOptions(); o.tag = a.contains("--tag"); o.printID = true
  exit(TestWindow.run(o))
case "tag":
  let c = try XControl(display: nil); try c.setTag(UInt32(a[2].dropFirst(2), radix: 16)!, secure: true)
case "state":
  let c = try XControl(display: nil); print(try c.readState() as Any)
default: print("?")
}
