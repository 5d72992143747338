"""An LLTM cell (pytorch/extension-cpp's example idea) as PyTorch operators made of oxide kernels:
``kernels.py`` holds the element-wise forward and backward kernels, ``lltm.py`` the operators
(``oxide.torch.op``), the ``LLTM`` module and a pure-PyTorch reference."""
