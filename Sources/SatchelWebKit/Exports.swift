// An app imports SatchelWebKit and gets the request layer and the container parts it is built on (the cookie jar,
// the bridge, the task driver, recovery) with it.
@_exported import SatchelHost
