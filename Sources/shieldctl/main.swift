import Foundation

exit(Dispatcher.main(Array(CommandLine.arguments.dropFirst())))
