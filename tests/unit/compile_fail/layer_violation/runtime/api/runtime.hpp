// The api layer's header that the memory layer must not include (a fixture of CheckLayers).
#pragma once
